"""Microphone-array benchmark: direction of arrival and beamforming in rooms it was not tuned on.

    ./dev bench mic_array/bench [--scenes 24] [--geometries G1,G2,...] [--no-wer] [--quick]
                                [--only tuning] [--set KEY=VALUE]...

Each scene (bench/array/scenes.py, from a fixed seed, split once into tuning and
validation) has a talker saying three phrases (in a quarter of the scenes from three
different places: a talker who moves), a TV playing speech at 0 or 5 dB SIR and diffuse
fan-like noise at 20 dB SNR, in pyroomacoustics rooms (T60 0.2-0.7 s). Beside each other
in one run: channel averaging (today's mono), the single best mic (an oracle pick per
scene), delay-and-sum and MVDR, the last two steered by the DOA tracker itself. Speech
activity is the talker's own (an oracle VAD), so the figures are the array's, not the VAD's.

SIR and SNR are measured by passing each component through the same time-varying weights
the mixture got. "target loss" is the level of the talker's direct sound (the first 2 ms of each room
response) out of MVDR against delay-and-sum: negative means MVDR cancelled part of the
talker itself (suppressing the talker's reflections and reverberation is not a loss). CPU
is this process's time per second of audio for the whole array stage (STFT, SRP-PHAT,
beam, inverse STFT); a Pi 4 core is taken as 4x slower (NOTES.md: 3-5x). A linear array
(the 2-mic HAT) cannot tell front from back: its errors are against the mirrored truth.

WER (4-mic array only) is given two ways: each of the talker's turns transcribed on its own,
from 0.2 s before the talker starts to 0.5 s after they stop, as the device hands a turn to
its recognizer; and the whole recording in one pass, where the TV's speech between the turns
is inserted too. The first is what a person meets.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from scenes import RATE, Rendered, generate, render, split  # type: ignore[import-not-found]
from support.words import edit_distance

from edgevoice.audio.array.beamformer import BeamMode
from edgevoice.audio.array.doa import angle_difference_deg
from edgevoice.audio.array.frontend import ArrayFrontEnd, ArraySettings
from edgevoice.audio.array.geometry import parse_geometry
from edgevoice.audio.array.stft import StreamingIstft, StreamingStft, frames_of

HOP = 160
PI4_FACTOR = 4.0


@dataclass
class Outcome:
    sir: dict[str, float]
    snr: dict[str, float]
    target_loss_db: float
    doa_errors: list[float]
    cpu_ms_per_s: float
    outputs: dict[str, np.ndarray]


def _power(x: np.ndarray, mask: np.ndarray) -> float:
    return float(np.mean(x[mask] ** 2)) + 1e-12


def _db(a: float, b: float) -> float:
    return 10.0 * float(np.log10(a / b))


def _beam(
    rendered: Rendered, geometry_name: str, mode: BeamMode, active: np.ndarray, settings: ArraySettings
) -> tuple[dict[str, np.ndarray], list[float], float]:
    geometry = parse_geometry(geometry_name)
    front = ArrayFrontEnd(geometry, replace(settings, beam=mode), hop=HOP, rate=RATE)
    parts = {
        "target": rendered.target,
        "early": rendered.target_early,
        "tv": rendered.tv,
        "noise": rendered.noise,
    }
    stfts = {k: StreamingStft(HOP, geometry.mic_count, settings.overlap) for k in parts}
    istfts = {k: StreamingIstft(HOP, settings.overlap) for k in (*parts, "mixture")}
    outs: dict[str, list[np.ndarray]] = {k: [] for k in (*parts, "mixture")}
    mixture_frames = frames_of(rendered.mixture, HOP)
    part_frames = {k: frames_of(v, HOP) for k, v in parts.items()}
    frame_active = [bool(active[i * HOP : (i + 1) * HOP].mean() > 0.5) for i in range(len(mixture_frames))]
    estimates: list[float] = []
    cpu = 0.0
    was_in = False
    for i, frame in enumerate(mixture_frames):
        start = time.process_time()
        outs["mixture"].append(front.process(frame, frame_active[i]))
        cpu += time.process_time() - start
        if was_in and not front.in_segment and front.last_segment is not None:
            estimates.append(front.last_segment.direction_deg)
        was_in = front.in_segment
        weights = front.last_weights
        for key in parts:
            spectrum = stfts[key].analyse(part_frames[key][i])
            outs[key].append(istfts[key].synthesise(front.beamformer.apply(spectrum, weights)))
    final = front.end_of_input()
    if final is not None:
        estimates.append(final.direction_deg)
    joined = {k: np.concatenate(v) for k, v in outs.items()}
    seconds = len(mixture_frames) * HOP / RATE
    return joined, estimates, 1000.0 * cpu / seconds


def evaluate(rendered: Rendered, geometry_name: str, settings: ArraySettings) -> Outcome:
    length = rendered.target.shape[0] // HOP * HOP
    active = np.zeros(rendered.target.shape[0], dtype=bool)
    for start, end, _ in rendered.segments:
        active[start:end] = True
    out_active = np.roll(active, HOP * (settings.overlap - 1))[:length]  # the beam's output is late
    sir: dict[str, float] = {}
    snr: dict[str, float] = {}
    outputs: dict[str, np.ndarray] = {}
    # averaging and the best single mic: no delay, exact components
    avg = {k: getattr(rendered, k).mean(axis=1)[:length] for k in ("target", "tv", "noise")}
    sir["average"] = _db(_power(avg["target"], active[:length]), _power(avg["tv"], active[:length]))
    snr["average"] = _db(_power(avg["target"], active[:length]), _power(avg["noise"], active[:length]))
    outputs["average"] = (rendered.mixture.mean(axis=1))[:length]
    per_mic = [
        _db(
            _power(rendered.target[:length, m], active[:length]),
            _power(rendered.tv[:length, m], active[:length]),
        )
        for m in range(rendered.target.shape[1])
    ]
    best = int(np.argmax(per_mic))
    sir["best mic"] = per_mic[best]
    snr["best mic"] = _db(
        _power(rendered.target[:length, best], active[:length]),
        _power(rendered.noise[:length, best], active[:length]),
    )
    outputs["best mic"] = rendered.mixture[:length, best]
    doa_errors: list[float] = []
    cpu = 0.0
    target_out: dict[str, float] = {}
    modes: tuple[tuple[BeamMode, str], ...] = (("delay-and-sum", "delay-and-sum"), ("mvdr", "mvdr"))
    for mode, label in modes:
        joined, estimates, cpu_mode = _beam(rendered, geometry_name, mode, active, settings)
        sir[label] = _db(_power(joined["target"], out_active), _power(joined["tv"], out_active))
        snr[label] = _db(_power(joined["target"], out_active), _power(joined["noise"], out_active))
        target_out[label] = _power(joined["early"], out_active)
        outputs[label] = joined["mixture"]
        if mode == "mvdr":
            cpu = cpu_mode
            linear = parse_geometry(geometry_name).is_linear
            truths = [(360.0 - a if linear and a > 180.0 else a) for _, _, a in rendered.segments]
            for estimate, truth in zip(estimates, truths, strict=False):
                doa_errors.append(angle_difference_deg(estimate, truth))
            doa_errors.extend([180.0] * max(0, len(truths) - len(estimates)))  # a missed segment
    return Outcome(sir, snr, _db(target_out["mvdr"], target_out["delay-and-sum"]), doa_errors, cpu, outputs)


def _transcriber(name: str):  # type: ignore[no-untyped-def]
    from edgevoice.device.assembly.hearing import build_asr
    from edgevoice.device.config import load_config

    loaded = load_config(overrides=[f"asr.engine={name}"], search_paths=[])
    return build_asr(loaded.config.asr, "en", loaded.config.models.dir or None)


def wer(engine, audio: np.ndarray, phrases: tuple[str, ...]) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    pcm = np.clip(np.rint(audio), -32768, 32767).astype(np.int16)
    text = engine.transcribe(pcm).text.lower().split()
    truth = " ".join(phrases).lower().split()
    return edit_distance(truth, text), len(truth)


TURN_PRE_S = 0.2  # the pre-roll the listener hands the recognizer with a turn
TURN_TAIL_S = 0.5  # what the end-of-turn wait hears after the talker stops


def wer_turns(  # type: ignore[no-untyped-def]
    engine, audio: np.ndarray, segments: tuple[tuple[int, int, float], ...], phrases: tuple[str, ...],
    delay: int = 0,
) -> tuple[int, int]:
    """Errors and words over the talker's turns, each transcribed on its own as the device
    would (pre-roll to end-of-turn tail): the TV between turns is not part of any turn."""
    errors = words = 0
    for (start, end, _), phrase in zip(segments, phrases, strict=True):
        lo = max(0, start + delay - int(TURN_PRE_S * RATE))
        hi = min(len(audio), end + delay + int(TURN_TAIL_S * RATE))
        e, w = wer(engine, audio[lo:hi], (phrase,))
        errors += e
        words += w
    return errors, words


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenes", type=int, default=24)
    parser.add_argument("--geometries", default="respeaker-2mic,respeaker-4mic,respeaker-6mic-circular")
    parser.add_argument("--no-wer", action="store_true", help="skip transcription (fast)")
    parser.add_argument(
        "--asr", default="auto", help="ASR engine for WER (default: the config's auto choice)"
    )
    parser.add_argument("--quick", action="store_true", help="6 scenes, the 4-mic array only")
    parser.add_argument(
        "--only", choices=("tuning", "validation"), help="score one set only (tune on tuning)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an ArraySettings field for this run, e.g. --set diagonal_loading=0.01",
    )
    args = parser.parse_args()
    if args.quick:
        args.scenes, args.geometries = 6, "respeaker-4mic"
    scenes = generate(args.scenes)
    tuning, validation = split(scenes)
    settings = ArraySettings()
    for item in args.set:
        key, _, value = item.partition("=")
        current = getattr(settings, key)
        settings = replace(
            settings,
            **{
                key: (value.lower() in ("1", "true", "yes"))
                if isinstance(current, bool)
                else type(current)(value)
            },
        )
    engine = None if args.no_wer else _transcriber(args.asr)
    methods = ("average", "best mic", "delay-and-sum", "mvdr")
    print(
        f"array benchmark: {len(tuning)} tuning + {len(validation)} validation scenes, seed-fixed split; "
        f"ASR for WER: {engine.info.engine + '/' + engine.info.model if engine else 'none'}"
    )
    for set_name, chosen in (("tuning", tuning), ("validation", validation)):
        if args.only and set_name != args.only:
            continue
        print(
            f"\n## {set_name} ({len(chosen)} scenes: T60 "
            f"{min(s.rt60_s for s in chosen):.2f}-{max(s.rt60_s for s in chosen):.2f} s)"
        )
        header = (
            "| geometry | SIR gain over averaging, DS / MVDR (dB) | best mic | SNR gain DS / MVDR (dB) "
            "| target loss (dB) | DOA error median / T60>=0.45 / moving (°) | CPU ms/s (Pi 4 est.) |"
        )
        print(header)
        print("|" + "---|" * 7)
        wer_rows: dict[tuple[str, float], dict[str, list[int]]] = defaultdict(
            lambda: defaultdict(lambda: [0, 0])
        )
        turn_rows: dict[tuple[str, float], dict[str, list[int]]] = defaultdict(
            lambda: defaultdict(lambda: [0, 0])
        )
        for geometry_name in args.geometries.split(","):
            geometry = parse_geometry(geometry_name)
            gains: dict[str, list[float]] = defaultdict(list)
            snr_gains: dict[str, list[float]] = defaultdict(list)
            losses, errors, reverberant, moving, cpus = [], [], [], [], []
            for scene in chosen:
                rendered = render(scene, geometry)
                outcome = evaluate(rendered, geometry_name, settings)
                for method in methods[1:]:
                    gains[method].append(outcome.sir[method] - outcome.sir["average"])
                for method in ("delay-and-sum", "mvdr"):
                    snr_gains[method].append(outcome.snr[method] - outcome.snr["average"])
                losses.append(outcome.target_loss_db)
                errors.extend(outcome.doa_errors)
                if scene.rt60_s >= 0.45:
                    reverberant.extend(outcome.doa_errors)
                if scene.moving:
                    moving.extend(outcome.doa_errors)
                cpus.append(outcome.cpu_ms_per_s)
                if engine is not None and geometry_name == "respeaker-4mic":
                    for method in methods:
                        errs, words = wer(engine, outcome.outputs[method], scene.phrases)
                        cell = wer_rows[(geometry_name, scene.sir_db)][method]
                        cell[0] += errs
                        cell[1] += words
                        delay = 0 if method in ("average", "best mic") else HOP * (settings.overlap - 1)
                        errs, words = wer_turns(engine, outcome.outputs[method], rendered.segments,
                                                scene.phrases, delay)
                        cell = turn_rows[(geometry_name, scene.sir_db)][method]
                        cell[0] += errs
                        cell[1] += words
            cpu = median(cpus)
            print(
                f"| {geometry_name} | {median(gains['delay-and-sum']):+.1f} / {median(gains['mvdr']):+.1f} "
                f"| {median(gains['best mic']):+.1f} | {median(snr_gains['delay-and-sum']):+.1f} / "
                f"{median(snr_gains['mvdr']):+.1f} | {median(losses):+.2f} (worst {min(losses):+.2f}) "
                f"| {median(errors):.1f} / {median(reverberant):.1f} / {median(moving):.1f} "
                f"| {cpu:.1f} ({cpu * PI4_FACTOR / 10:.1f} % of a Pi 4 core) |"
            )
            sys.stdout.flush()
        for title, rows in (("each turn transcribed on its own, as the device does", turn_rows),
                            ("the whole recording in one pass, the TV between turns included", wer_rows)):
            if not rows:
                continue
            print(f"\nWER on the 4-mic array ({set_name}; {title}):")
            print("| SIR | " + " | ".join(methods) + " | MVDR vs averaging |")
            print("|" + "---|" * (len(methods) + 2))
            for (_, sir_db), cells in sorted(rows.items()):
                rates = {m: 100.0 * cells[m][0] / max(1, cells[m][1]) for m in methods}
                relative = 100.0 * (rates["average"] - rates["mvdr"]) / max(rates["average"], 1e-9)
                print(
                    f"| {sir_db:.0f} dB | "
                    + " | ".join(f"{rates[m]:.1f} %" for m in methods)
                    + f" | {relative:+.0f} % relative |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
