"""Does the wake word hear better through the beam or through an omni channel?

    ./dev bench mic_array/wake_word [--scenes 24] [--geometry respeaker-4mic] [--only tuning]

The array benchmark's rooms (scenes.py: same seed, same tuning/validation split, a TV
playing speech at 0 or 5 dB SIR and fan noise at 20 dB SNR), with the person saying
"okay nabu" from each of their three places (the bundled voice, as the device harness's
person says it). The real microWakeWord detector (okay_nabu, the shipped cutoff) listens
to each of: the mics averaged (an omni channel, today's mono), one mic alone, delay-and-sum
and MVDR as the daemon runs them (the beam steers at the talker 200 ms into their speech:
the wake word is the first thing they say, so it is mostly heard by a beam still pointing
where the last talker was). Speech activity is the person's own (an oracle VAD). A
detection counts when it falls inside the phrase or the 0.7 s after it; any other is a
false wake (the TV).
"""

from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from scenes import RATE, generate, render, split  # type: ignore[import-not-found]
from support.device_harness import WAKE_PHRASE, voice

from edgevoice.audio.array.frontend import ArrayFrontEnd, ArraySettings
from edgevoice.audio.array.geometry import parse_geometry
from edgevoice.audio.hearing.wakeword import WakeWordDetector
from edgevoice.models import ModelKind, resolve_model

HOP = 160
METHODS = ("average (omni)", "one mic", "delay-and-sum", "MVDR")


@functools.cache
def _wake_phrase(_text: str, _voice: str) -> np.ndarray:
    return voice(WAKE_PHRASE).astype(np.float64)


def _heard(signal: np.ndarray, model: Path) -> list[float]:
    detector = WakeWordDetector(model)
    pcm = np.clip(np.rint(signal), -32768, 32767).astype(np.int16)
    times = []
    for start in range(0, len(pcm) - HOP + 1, HOP):
        times.extend((start + HOP) / RATE for _ in detector.process(pcm[start : start + HOP]))
    return times


def _beam(mixture: np.ndarray, active: np.ndarray, geometry_name: str, beam: str) -> np.ndarray:
    front = ArrayFrontEnd(parse_geometry(geometry_name), ArraySettings(beam=beam), hop=HOP)  # type: ignore[arg-type]
    out = [front.process(mixture[s : s + HOP], bool(active[max(0, s - HOP) : s].any()))
           for s in range(0, len(mixture) - HOP + 1, HOP)]
    lag = (front.settings.overlap - 1) * HOP
    joined = np.concatenate(out)
    return np.concatenate((joined[lag:], np.zeros(lag)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenes", type=int, default=24)
    parser.add_argument("--geometry", default="respeaker-4mic")
    parser.add_argument("--only", choices=("tuning", "validation"))
    args = parser.parse_args()
    geometry = parse_geometry(args.geometry)
    model = resolve_model("okay_nabu", ModelKind.WAKEWORD).path
    tuning, validation = split(generate(args.scenes))
    sets = [("tuning", tuning), ("validation", validation)]
    if args.only:
        sets = [s for s in sets if s[0] == args.only]
    print(f"# the wake word through the array ({args.geometry}); the validation figures count\n")
    for name, scenes in sets:
        hits = {sir: dict.fromkeys(METHODS, 0) for sir in (0.0, 5.0)}
        false = dict.fromkeys(METHODS, 0)
        said = {0.0: 0, 5.0: 0}
        for scene in scenes:
            rendered = render(replace(scene, phrases=(WAKE_PHRASE,) * 3), geometry, _wake_phrase)
            mixture = rendered.mixture
            active = np.zeros(len(mixture), dtype=bool)
            for start, end, _ in rendered.segments:
                active[start:end] = True
            signals = {
                "average (omni)": mixture.mean(axis=1),
                "one mic": mixture[:, 0],
                "delay-and-sum": _beam(mixture, active, args.geometry, "delay-and-sum"),
                "MVDR": _beam(mixture, active, args.geometry, "mvdr"),
            }
            said[scene.sir_db] += len(rendered.segments)
            for method, signal in signals.items():
                times = _heard(signal, model)
                for start, end, _ in rendered.segments:
                    inside = [t for t in times if start / RATE <= t <= end / RATE + 0.7]
                    hits[scene.sir_db][method] += bool(inside)
                false[method] += sum(
                    not any(start / RATE <= t <= end / RATE + 0.7 for start, end, _ in rendered.segments)
                    for t in times)
            print(f"  {name} room {scene.index} ({scene.sir_db:.0f} dB SIR) done", flush=True)
        print(f"\n{name} rooms ({len(scenes)}), wake words detected:\n")
        print("| SIR | said | " + " | ".join(METHODS) + " |")
        print("|---|---:|" + "---:|" * len(METHODS))
        for sir in (0.0, 5.0):
            if said[sir]:
                print(f"| {sir:.0f} dB | {said[sir]} | " + " | ".join(
                    f"{hits[sir][m]} ({100 * hits[sir][m] / said[sir]:.0f} %)" for m in METHODS) + " |")
        print("| false wakes | | " + " | ".join(str(false[m]) for m in METHODS) + " |\n")


if __name__ == "__main__":
    main()
