"""Where the echo canceller goes with a microphone array: per mic before the beam, or once
after it. Side by side in one run, on the array benchmark's rooms (scenes.py: same seed,
same tuning/validation split) with the device's own loudspeaker added.

    ./dev bench mic_array/echo_placement [--scenes 24] [--geometry respeaker-4mic] [--only tuning]

Each room: the loudspeaker 5-20 cm from the array (below it, at a random azimuth) plays
two replies in the bundled piper voice; between them the person (espeak-ng, 1-2 m away)
says a phrase alone, so the beam turns to them; 2.5 s into the second reply they talk over
it. Diffuse fan-like noise at 20 dB SNR to the person. The methods, all with the real
edgevoice canceller and the daemon's own stage (audio/array/hearing.py):

- ``mono``: today's path without an array: the mics averaged, one canceller;
- ``per-mic + MVDR``: one canceller per mic, MVDR on their outputs (the default);
- ``MVDR, then AEC``: one canceller after MVDR, the beam held while the speaker plays;
- ``DS, then AEC``: the same after delay-and-sum.

Reported: echo removed in the first reply once converged (from 1.5 s on), echo removed in
the first 2 s of the second reply (after the beam turned to the person: a changed path for
a canceller after the beam), the person's level through the chain against ``mono`` while
they speak alone (a loss would be the beam or the canceller eating them), what a barge-in
detector has to go on (while the person talks over reply 2: the chain's output over what
the same chain leaves of the echo with the person silent, in a second run), and CPU per
second of audio (this process's time; a Pi 4 core taken as 4x slower). The VAD is the
person's own timeline (an oracle), so the figures are the placement's, not the VAD's.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from scenes import (  # type: ignore[import-not-found]
    RATE,
    TALKER_HEIGHT,
    Scene,
    _point,
    _rir_signal,
    _speech,
    generate,
    split,
)
from support.hearing_audio import piper_speech

from edgevoice.audio.aec import create_canceller
from edgevoice.audio.array.frontend import ArraySettings
from edgevoice.audio.array.geometry import ArrayGeometry, parse_geometry
from edgevoice.audio.array.hearing import HOP, ArrayHearing

REPLIES = (
    "Here is the forecast for the rest of the week. Tomorrow starts cloudy with light rain "
    "in the morning, clearing by the afternoon.",
    "The museum opens at nine on weekdays and at ten on Sundays. The cafe on the ground "
    "floor closes half an hour before the galleries do.",
)
METHODS = ("mono", "per-mic + MVDR", "MVDR, then AEC", "DS, then AEC")
PI4_FACTOR = 4.0


@lru_cache(maxsize=4)
def _reply(index: int) -> np.ndarray:
    return piper_speech(REPLIES[index]).astype(np.float64)[: 5 * RATE]


@dataclass
class Timeline:
    mics: np.ndarray  # (samples, mics) int16
    echo: np.ndarray  # (samples, mics) float: the loudspeaker's part alone
    talker: np.ndarray  # (samples, mics) float: the person's part alone
    reference: np.ndarray  # (samples,) int16
    speech: np.ndarray  # (samples,) bool: the person talks
    reply_a: tuple[int, int]
    reply_b: tuple[int, int]
    alone: tuple[int, int]
    over: tuple[int, int]  # the person talking over reply 2 (a barge-in)

    def without_person(self) -> Timeline:
        """The same room with the person silent: what each chain leaves of the echo alone."""
        mics = np.clip(np.rint(self.mics.astype(np.float64) - self.talker), -32768, 32767).astype(np.int16)
        return Timeline(mics, self.echo, np.zeros_like(self.talker), self.reference,
                        np.zeros_like(self.speech), self.reply_a, self.reply_b, self.alone, self.over)


def render(scene: Scene, geometry: ArrayGeometry) -> Timeline:
    rng = np.random.default_rng([scene.noise_seed, 11])
    rotation = math.radians(scene.rotation_deg)
    rot = np.array([[math.cos(rotation), -math.sin(rotation), 0], [math.sin(rotation), math.cos(rotation), 0],
                    [0, 0, 1]])
    mics = (geometry.centred() @ rot.T + np.array(scene.centre)).T
    a, b = _reply(0), _reply(1)
    phrase_1, phrase_2 = (_speech(text, scene.voice) for text in scene.phrases[:2])
    start_a = RATE
    alone_start = start_a + len(a) + RATE // 2
    start_b = alone_start + len(phrase_1) + int(0.8 * RATE)
    over = start_b + int(2.5 * RATE)
    length = max(start_b + len(b), over + len(phrase_2)) + RATE // 2
    reference = np.zeros(length)
    reference[start_a : start_a + len(a)] = a
    reference[start_b : start_b + len(b)] = b
    dry = np.zeros(length)
    dry[alone_start : alone_start + len(phrase_1)] = phrase_1
    dry[over : over + len(phrase_2)] = phrase_2
    distance = float(rng.uniform(0.05, 0.20))
    azimuth = float(rng.uniform(0, 360))
    speaker = [scene.centre[0] + distance * math.cos(math.radians(azimuth)),
               scene.centre[1] + distance * math.sin(math.radians(azimuth)), scene.centre[2] - 0.04]
    echo = _rir_signal(scene.room_dim, scene.rt60_s, mics, source=speaker, signal=reference, length=length)
    position = _point(scene.centre, scene.talker_azimuths_deg[0] + scene.rotation_deg,
                      scene.talker_distance_m, TALKER_HEIGHT, scene.room_dim)
    talker = _rir_signal(scene.room_dim, scene.rt60_s, mics, source=position, signal=dry, length=length)
    noise = rng.standard_normal((length, geometry.mic_count))
    noise = np.cumsum(noise, axis=0) * 0.02
    noise -= np.apply_along_axis(lambda x: np.convolve(x, np.ones(400) / 400, mode="same"), 0, noise)
    speech = dry != 0
    # levels as a board hears them: the echo at -20 dBFS (a loud reply, close by), the person
    # at -32 dBFS, the fan 20 dB under the person; the reference at -18 dBFS
    echo *= 3300.0 / math.sqrt(float(np.mean(echo[reference != 0] ** 2)))
    talker *= 800.0 / math.sqrt(float(np.mean(talker[speech] ** 2)))
    noise *= 80.0 / math.sqrt(float(np.mean(noise**2)))
    reference *= 4000.0 / math.sqrt(float(np.mean(reference[reference != 0] ** 2)))
    mixture = np.clip(np.rint(echo + talker + noise), -32768, 32767).astype(np.int16)
    played = np.clip(np.rint(reference), -32768, 32767).astype(np.int16)
    return Timeline(mixture, echo, talker, played, speech, (start_a, start_a + len(a)),
                    (start_b, start_b + len(b)),
                    (alone_start, alone_start + len(phrase_1)),
                    (over, min(over + len(phrase_2), start_b + len(b))))


def run(method: str, timeline: Timeline, geometry: ArrayGeometry) -> tuple[np.ndarray, float, int]:
    """The method's output (aligned with the input) and its CPU seconds."""
    mics, reference, speech = timeline.mics, timeline.reference, timeline.speech
    if method == "mono":
        canceller = create_canceller("edgevoice")
        mono = np.rint(mics.astype(np.float64).mean(axis=1)).astype(np.int16)
        started = time.process_time()
        out = [canceller.process(mono[s : s + HOP], reference[s : s + HOP])
               for s in range(0, len(mono) - HOP + 1, HOP)]
        return np.concatenate(out).astype(np.float64), time.process_time() - started, 0
    if method == "per-mic + MVDR":
        hearing = ArrayHearing(geometry, ArraySettings(beam="mvdr"),
                               [create_canceller("edgevoice") for _ in range(geometry.mic_count)], "per-mic")
    else:
        beam = "mvdr" if method.startswith("MVDR") else "delay-and-sum"
        hearing = ArrayHearing(geometry, ArraySettings(beam=beam), [create_canceller("edgevoice")],
                               "after-beam")
    out = []
    started = time.process_time()
    for s in range(0, len(mics) - HOP + 1, HOP):
        clean, _ = hearing.process(mics[s : s + HOP], reference[s : s + HOP],
                                   speech=bool(speech[max(0, s - HOP) : s].any()),
                                   far_end=bool(reference[s : s + HOP].any()))
        out.append(clean)
    cpu = time.process_time() - started
    lag = hearing.latency_periods * HOP
    joined = np.concatenate(out).astype(np.float64)
    return np.concatenate((joined[lag:], np.zeros(lag))), cpu, lag


def _db(x: np.ndarray) -> float:
    return 10.0 * math.log10(float(np.mean(np.asarray(x, dtype=np.float64) ** 2)) + 1e-9)


def score(timeline: Timeline, outputs: dict[str, np.ndarray],
          echo_only: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    a0, a1 = timeline.reply_a
    b0 = timeline.reply_b[0]
    p0, p1 = timeline.alone
    o0, o1 = timeline.over
    echo_a = timeline.echo[a0 + int(1.5 * RATE) : a1].mean(axis=1)
    echo_b = timeline.echo[b0 : b0 + 2 * RATE].mean(axis=1)
    figures: dict[str, dict[str, float]] = {}
    for method, out in outputs.items():
        figures[method] = {
            "erle_a": _db(echo_a) - _db(out[a0 + int(1.5 * RATE) : a1]),
            "erle_b": _db(echo_b) - _db(out[b0 : b0 + 2 * RATE]),
            "talker_db": _db(out[p0:p1]) - _db(outputs["mono"][p0:p1]),
            # what a barge-in detector has to go on: during the double talk, the chain's
            # output over what the same chain leaves with the person silent
            "double_talk_db": _db(out[o0:o1]) - _db(echo_only[method][o0:o1]),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenes", type=int, default=24)
    parser.add_argument("--geometry", default="respeaker-4mic")
    parser.add_argument("--only", choices=("tuning", "validation"))
    args = parser.parse_args()
    geometry = parse_geometry(args.geometry)
    tuning, validation = split(generate(args.scenes))
    sets = [("tuning", tuning), ("validation", validation)]
    if args.only:
        sets = [s for s in sets if s[0] == args.only]
    print(f"# echo canceller placement, {args.geometry}; validation figures are the ones that count\n")
    for name, scenes in sets:
        rows: dict[str, list[dict[str, float]]] = {m: [] for m in METHODS}
        cpu: dict[str, float] = dict.fromkeys(METHODS, 0.0)
        audio_s = 0.0
        for scene in scenes:
            timeline = render(scene, geometry)
            outputs, echo_only = {}, {}
            silent = timeline.without_person()
            for method in METHODS:
                outputs[method], spent, _ = run(method, timeline, geometry)
                cpu[method] += spent
                echo_only[method] = run(method, silent, geometry)[0]
            audio_s += len(timeline.mics) / RATE
            for method, figures in score(timeline, outputs, echo_only).items():
                rows[method].append(figures)
            done = ", ".join(f"{m} {rows[m][-1]['erle_a']:.1f}/{rows[m][-1]['erle_b']:.1f} dB"
                             for m in METHODS)
            print(f"  {name} room {scene.index}: {done}", flush=True)
        print(f"\n{name} rooms ({len(scenes)}):\n")
        print("| method | echo removed, reply 1: mean (worst) | reply 2's first 2 s, after the beam turned: "
              "mean (worst) | the person against mono: median (worst) | double talk, the person over "
              "what is left of the echo: median (worst) | CPU ms per s (% of a Pi 4 core) |")
        print("|---|---|---|---|---|---|")
        for method in METHODS:
            a = [r["erle_a"] for r in rows[method]]
            b = [r["erle_b"] for r in rows[method]]
            t = [r["talker_db"] for r in rows[method]]
            d = [r["double_talk_db"] for r in rows[method]]
            ms = 1000.0 * cpu[method] / audio_s
            print(f"| {method} | {statistics.mean(a):.1f} ({min(a):.1f}) dB | {statistics.mean(b):.1f} "
                  f"({min(b):.1f}) dB | {statistics.median(t):+.1f} ({min(t):+.1f}) dB "
                  f"| {statistics.median(d):+.1f} ({min(d):+.1f}) dB "
                  f"| {ms:.1f} ({ms * PI4_FACTOR / 10:.1f} %) |")
        print()


if __name__ == "__main__":
    main()
