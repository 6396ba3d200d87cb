"""Every engine on the 60 rooms of ``rooms.py``, scored per set: tuning and validation.

    .venv/bin/python bench/aec_rooms/run.py                     # all 60 rooms, 4 engines
    .venv/bin/python bench/aec_rooms/run.py --rooms 0,31 --engines edgevoice,none
    .venv/bin/python bench/aec_rooms/run.py --jobs 2 --json /tmp/rooms.json
    .venv/bin/python bench/aec_rooms/run.py --from-json /tmp/rooms.json   # its tables again

Each engine runs blind in its own child process through bench/aec's runner
(``run_engine.py``) and is scored with bench/aec's scores (``score.py``), so the figures
mean what bench/aec's do: echo removed where the far end talks alone (2-8 s, 16-17 s and
20-23 s: not the 3 s after the change), the same over the 3 s after the echo path changed
(17-20 s), when the echo came back within 10 dB of that room's steady state, near-end
loss in double talk and with the near end alone (against the engine's own output on the
near end alone), PESQ-WB in double talk (the ``pesq`` package; reference: the mic with
the loudspeaker silent, degraded: the engine's output, aligned by its measured latency),
CPU ms per second of audio. **The validation set's figures are the ones that count:**
tune on the tuning rooms only.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "aec"))

from rooms import (  # type: ignore[import-not-found]  # beside this file
    AFTER_S,
    RATE,
    T_CHG,
    T_END,
    Room,
    RoomSpec,
    cached_room,
    loudspeaker_sdr_db,
    room_specs,
    split,
)
from score import echo_removed_db, measured_latency, near_loss_db  # type: ignore[import-not-found]

# bench/aec/bench.py, by name: ``bench`` alone would also name the repository's folder
_aec_bench = importlib.import_module("bench")
run_engine = _aec_bench.run
to_pcm = _aec_bench.to_pcm

ENGINES = "edgevoice,webrtc,speex,none"
RECOVER_WINDOW_S = 0.5
RECOVER_STEP_S = 0.1

# (label, key, how, target, format)
ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    ("echo removed, far end alone, average (dB)", "erle", "mean", "≥ 40 (≥ 38 in the first table)", "{:.1f}"),
    ("echo removed, worst room (dB)", "erle", "min", "≥ 35", "{:.1f}"),
    ("clock-drift rooms (75-150 ppm), average (dB)", "erle_drift", "mean", "≥ 35", "{:.1f}"),
    ("clock-drift rooms, worst (dB)", "erle_drift", "min", "", "{:.1f}"),
    ("the 3 s after the echo path changed, average (dB)", "after_change", "mean", "≥ 30", "{:.1f}"),
    ("the 3 s after the change, worst room (dB)", "after_change", "min", "", "{:.1f}"),
    ("back within 10 dB of steady state, median (s)", "recover_s", "median", "≤ 1", "{:.1f}"),
    ("back within 10 dB of steady state, worst (s)", "recover_s", "max", "≤ 1", "{:.1f}"),
    ("near-end loss in double talk, average (dB)", "dt_loss", "mean", "≤ 1", "{:.2f}"),
    ("near-end loss, near end alone, average (dB)", "na_loss", "mean", "≤ 0.5", "{:.2f}"),
    ("PESQ-WB in double talk, average", "pesq", "mean", "≥ 2.5", "{:.2f}"),
    ("PESQ-WB in double talk, worst room", "pesq", "min", "", "{:.2f}"),
    (
        "(the noise ceiling: echo removed with all echo gone, noise left), average",
        "ceiling",
        "mean",
        "",
        "{:.1f}",
    ),
    ("(the noise ceiling), lowest room", "ceiling", "min", "", "{:.1f}"),
    ("(clipping rooms: distortion below the linear part), average", "linear_ceiling", "mean", "", "{:.1f}"),
    ("(clipping rooms: distortion below the linear part), lowest", "linear_ceiling", "min", "", "{:.1f}"),
    ("CPU ms per s of audio", "cpu", "mean", "≤ 15", "{:.1f}"),
)
BREAKDOWN = (
    "size_class",
    "t60_band",
    "distance_band",
    "aim_band",
    "delay_band",
    "drift_class",
    "clipping",
    "change",
    "noise",
    "noise_band",
    "ser_band",
    "near_voice",
)


def _pesq(reference: np.ndarray, degraded: np.ndarray) -> float:
    try:
        from pesq import pesq  # type: ignore[import-untyped]
    except ImportError:
        return math.nan
    n = min(len(reference), len(degraded))
    try:
        return float(pesq(RATE, reference[:n], degraded[:n], "wb"))
    except Exception:  # NoUtterancesError and friends: a room PESQ cannot score
        return math.nan


def _span(a: float, b: float) -> slice:
    return slice(int(a * RATE), int(b * RATE))


def _windows(
    mic: np.ndarray,
    out: np.ndarray,
    noise: np.ndarray,
    latency: int,
    span: tuple[float, float],
    *,
    level: float,
) -> list[tuple[float, float] | None]:
    """(echo removed, its noise ceiling) per 0.5 s window starting every 0.1 s in
    ``span``; None where the mic is 6 dB or more below ``level`` (a pause between
    sentences). The ceiling is what the window would read with all echo gone and the
    noise left: the mic against the mic with the loudspeaker silent."""
    scores: list[tuple[float, float] | None] = []
    for t in np.arange(span[0], span[1] - 1e-9, RECOVER_STEP_S):
        w = ((float(t), float(t) + RECOVER_WINDOW_S),)
        m = mic[_span(*w[0])].astype(np.float64)
        if float(np.mean(m**2)) < level / 4:
            scores.append(None)
            continue
        scores.append((echo_removed_db(mic, out, w, latency), echo_removed_db(mic, noise, w, 0)))
    return scores


def recover_s(mic: np.ndarray, out: np.ndarray, noise: np.ndarray, latency: int) -> float:
    """Seconds after the change until every later 0.5 s window of the 3 s in which the
    device talks removes at least the room's steady state (the median window of 20-23 s)
    minus 10 dB, or comes within 3 dB of the window's noise ceiling (babble 25 dB under
    the echo caps what a window can show). ``AFTER_S`` if never."""
    level = float(np.mean(mic[_span(T_CHG - 2.0, T_END)].astype(np.float64) ** 2))
    late = _windows(mic, out, noise, latency, (T_CHG + AFTER_S, T_END - RECOVER_WINDOW_S), level=level)
    steady = [w[0] for w in late if w is not None]
    if not steady:
        return math.nan
    target = statistics.median(steady) - 10.0
    after = _windows(mic, out, noise, latency, (T_CHG, T_CHG + AFTER_S - RECOVER_WINDOW_S), level=level)
    for k in range(len(after)):
        if all(w is None or w[0] >= min(target, w[1] - 3.0) for w in after[k:]):
            return k * RECOVER_STEP_S
    return float(AFTER_S)


def score_room(room: Room, engine: str, res: dict[str, np.ndarray]) -> dict[str, float]:
    mic = to_pcm(room.mic)
    near = to_pcm(room.near_only)
    out, out_near = res["out"], res["out_near"]
    lat = measured_latency(near, out_near)
    erle = echo_removed_db(mic, out, room.far_alone, lat)
    dt = _span(*room.double_talk)
    aligned = out[lat:].astype(np.float64) / 32768.0
    ref = near[dt].astype(np.float64) / 32768.0
    scores = {
        "erle": erle,
        "after_change": echo_removed_db(mic, out, (room.after_change,), lat),
        "recover_s": recover_s(mic, out, near, lat) if engine != "none" else math.nan,
        # what echo removed would read if all echo went and the noise stayed untouched
        "ceiling": echo_removed_db(mic, near, room.far_alone, 0),
        "dt_loss": near_loss_db(out, out_near, room.double_talk),
        "na_loss": near_loss_db(out, out_near, room.near_alone),
        "pesq": _pesq(ref, aligned[dt]),
        "cpu": 1000.0 * float(res["cpu_s"]) / (len(mic) / RATE),
        "latency_ms": 1000.0 * lat / RATE,
    }
    if room.spec.drift_class == "large":
        scores["erle_drift"] = erle
    if room.spec.clipping != "none":
        # what a linear filter alone could remove of this loudspeaker's output
        scores["linear_ceiling"] = loudspeaker_sdr_db(room.spec, room.reference)
    return scores


def _run_room(spec: RoomSpec, engines: list[str], tmp: Path) -> tuple[RoomSpec, dict[str, dict[str, float]]]:
    room = cached_room(spec)
    src = tmp / f"{spec.name}.npz"
    np.savez(src, mic=to_pcm(room.mic), near_only=to_pcm(room.near_only), reference=to_pcm(room.reference))
    scores = {}
    for engine in engines:
        res = run_engine(engine, src, tmp / f"{spec.name}-{engine}.npz")
        scores[engine] = score_room(room, engine, res)
    src.unlink()
    return spec, scores


def _aggregate(vals: list[float], how: str) -> float:
    vals = [v for v in vals if not math.isnan(v)]
    if not vals:
        return math.nan
    if how == "min":
        return min(vals)
    if how == "max":
        return max(vals)
    return float(statistics.median(vals) if how == "median" else statistics.fmean(vals))


def table(
    title: str, ids: tuple[int, ...], engines: list[str], results: dict[int, dict[str, dict[str, float]]]
) -> str:
    lines = [
        f"{title} ({len(ids)} rooms)",
        "",
        "| | " + " | ".join(engines) + " | target |",
        "|---|" + "---|" * (len(engines) + 1),
    ]
    for label, key, how, target, fmt in ROWS:
        cells = []
        for engine in engines:
            vals = [results[i][engine][key] for i in ids if key in results[i][engine]]
            value = _aggregate(vals, how)
            cells.append("n/a" if math.isnan(value) else fmt.format(value))
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {target} |")
    return "\n".join(lines)


def breakdown(
    ids: tuple[int, ...],
    engines: list[str],
    specs: list[RoomSpec],
    results: dict[int, dict[str, dict[str, float]]],
) -> str:
    """Echo removed (average) and the 3 s after the change per condition."""
    lines = [
        "| condition | rooms | " + " | ".join(f"{e}: echo / after change" for e in engines) + " |",
        "|---|---|" + "---|" * len(engines),
    ]
    for field in BREAKDOWN:
        for value in sorted({getattr(specs[i], field) for i in ids}):
            group = [i for i in ids if getattr(specs[i], field) == value]
            cells = []
            for engine in engines:
                erle = _aggregate([results[i][engine]["erle"] for i in group], "mean")
                after = _aggregate([results[i][engine]["after_change"] for i in group], "mean")
                cells.append(f"{erle:.1f} / {after:.1f}")
            lines.append(f"| {field} = {value} | {len(group)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def worst_rooms(
    ids: tuple[int, ...],
    engine: str,
    specs: list[RoomSpec],
    results: dict[int, dict[str, dict[str, float]]],
    n: int = 5,
) -> str:
    lines = []
    for key, label, reverse in (
        ("erle", "echo removed (dB)", False),
        ("after_change", "3 s after the change (dB)", False),
        ("pesq", "PESQ-WB in double talk", False),
        ("dt_loss", "near-end loss (dB)", True),
    ):
        ranked = sorted(
            (i for i in ids if not math.isnan(results[i][engine][key])),
            key=lambda i: results[i][engine][key],
            reverse=reverse,
        )[:n]
        lines.append(f"worst {n} by {label}, {engine}:")
        for i in ranked:
            r = results[i][engine]
            lines.append(
                f"  {specs[i].name} {r[key]:.2f} (echo {r['erle']:.1f}, after change "
                f"{r['after_change']:.1f}, noise ceiling {r['ceiling']:.1f}, "
                f"distortion {r.get('linear_ceiling', math.inf):.1f}): "
                f"{specs[i].conditions()}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engines", default=ENGINES)
    parser.add_argument("--rooms", default="", help="comma-separated room indices (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="rooms in parallel")
    parser.add_argument("--json", default="", help="write every room's scores here")
    parser.add_argument("--from-json", default="", help="print the tables of a run saved with --json")
    args = parser.parse_args()
    engines = args.engines.split(",")
    specs = room_specs()
    tuning, validation = split()
    chosen = [int(x) for x in args.rooms.split(",")] if args.rooms else list(range(len(specs)))
    results: dict[int, dict[str, dict[str, float]]] = {}
    load_start = os.getloadavg()
    t0 = time.monotonic()
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())["rooms"]
        results = {int(name[1:]): room["scores"] for name, room in saved.items() if int(name[1:]) in chosen}
        for i, scores in results.items():
            if specs[i].clipping == "none":  # runs before the ceiling was kept for clipping rooms only
                for engine_scores in scores.values():
                    engine_scores.pop("linear_ceiling", None)
        engines = [e for e in engines if all(e in r for r in results.values())]
        chosen = []
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        jobs = [pool.submit(_run_room, specs[i], engines, Path(tmp)) for i in chosen]
        for job in jobs:
            spec, scores = job.result()
            results[spec.index] = scores
            which = "tuning" if spec.index in tuning else "validation"
            cells = "  ".join(
                f"{e} {s['erle']:.1f}/{s['after_change']:.1f}/{s['dt_loss']:.2f}/{s['pesq']:.2f}"
                for e, s in scores.items()
            )
            print(f"{spec.name} ({which}) {cells}  [{spec.conditions()}]", flush=True)
    elapsed = time.monotonic() - t0
    print("\n(per room: echo removed / 3 s after the change / near-end loss in double talk / PESQ-WB)\n")
    for title, all_ids in (("Tuning set", tuning), ("Validation set: the figures that count", validation)):
        ids = tuple(i for i in all_ids if i in results)
        if not ids:
            continue
        print(table(title, ids, engines, results))
        print()
        print(breakdown(ids, engines, specs, results))
        print()
    val = tuple(i for i in validation if i in results)
    if val and "edgevoice" in engines:
        print(worst_rooms(val, "edgevoice", specs, results))
    if args.from_json:
        print(f"\n{len(results)} rooms x {len(engines)} engines, as saved in {args.from_json}")
        return
    print(
        f"\n{len(results)} rooms x {len(engines)} engines in {elapsed / 60:.1f} min, 23 s each, 16 kHz, "
        "10 ms periods, engines not told the delay. Load average at start / end: "
        + ", ".join(f"{x:.1f}" for x in load_start)
        + " / "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg())
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "rooms": {
                        specs[i].name: {
                            "split": "tuning" if i in tuning else "validation",
                            "conditions": specs[i].conditions(),
                            "scores": results[i],
                        }
                        for i in sorted(results)
                    }
                },
                indent=1,
                allow_nan=True,
            )
        )


if __name__ == "__main__":
    main()
