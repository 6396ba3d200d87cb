"""Echo-canceller benchmark: every engine side by side on the same synthetic rooms.

    .venv/bin/python bench/aec/bench.py            # quick: 3 rooms + the worst case
    .venv/bin/python bench/aec/bench.py --full     # 10 rooms + 3 worst cases
    .venv/bin/python bench/aec/bench.py --engines edgevoice,speex
    .venv/bin/python bench/aec/bench.py --engines edgevoice,edgevoice@HEAD~3   # before/after
    .venv/bin/python bench/aec/bench.py --engines edgevoice,edgevoice-numpy    # C kernel vs numpy

Needs ``edgevoice[bench]`` (pyroomacoustics), the piper voice and espeak-ng. Each engine
runs in a child process (``run_engine.py``), blind (no delay hint). Scores: echo removed
where the far end alone is active after the first 2 s; the same 3-5 s after the echo
path changed; near-end loss in double talk and with the near end alone, against the
engine's own output on the near end alone; CPU ms per second of audio (process CPU time
of the child, so other jobs on the machine inflate it less than wall time, though they
still do: report the load average beside it); added latency. ``edgevoice@REV`` runs the
edgevoice engine as it was at git revision REV.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenarios import RATE, make_scenario
from score import echo_removed_db, measured_latency, near_loss_db

ROWS = (
    ("echo removed, far end alone, average (dB)", "erle", "mean"),
    ("worst scenario (250 ms, drift, clipping) (dB)", "erle_worst", "min"),
    ("3 s after an echo-path change (dB)", "after_change", "mean"),
    ("near-end loss in double talk (dB)", "dt_loss", "mean"),
    ("near-end loss, near end alone (dB)", "na_loss", "mean"),
    ("CPU ms per s of audio", "cpu", "mean"),
    ("added latency (ms)", "latency", "mean"),
    ("delay estimate error (ms)", "delay_err", "mean"),
)


def to_pcm(x: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(x * 32768.0), -32768, 32767).astype(np.int16)


def run(engine: str, src: Path, dst: Path) -> dict[str, np.ndarray]:
    script = Path(__file__).resolve().parent / "run_engine.py"
    proc = subprocess.run([sys.executable, str(script), engine, str(src), str(dst)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{engine}: {proc.stderr.strip()[-400:]}")
    with np.load(dst) as data:
        return {k: data[k] for k in data.files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="10 rooms and 3 worst cases")
    parser.add_argument("--engines", default="edgevoice,webrtc,speex,none")
    parser.add_argument("--seeds", type=int, default=0, help="override the number of random rooms")
    args = parser.parse_args()
    engines = args.engines.split(",")
    rooms = args.seeds or (10 if args.full else 3)
    worst = 3 if args.full else 1
    plan = [(seed, False) for seed in range(1, rooms + 1)] + [(100 + i, True) for i in range(worst)]
    results: dict[str, dict[str, list[float]]] = {e: {r[1]: [] for r in ROWS} for e in engines}
    with tempfile.TemporaryDirectory() as tmp:
        for seed, is_worst in plan:
            sc = make_scenario(seed, worst=is_worst)
            src = Path(tmp) / f"{sc.name}.npz"
            mic = to_pcm(sc.mic)
            np.savez(src, mic=mic, near_only=to_pcm(sc.near_only), reference=to_pcm(sc.reference))
            line = [f"{sc.name}: delay {sc.delay_ms:.0f} ms, T60 {sc.t60:.2f} s, "
                    f"{100 * sc.distance_m:.0f} cm, SER {sc.ser_db:.1f} dB"]
            for engine in engines:
                res = run(engine, src, Path(tmp) / f"{sc.name}-{engine}.npz")
                out, out_near = res["out"], res["out_near"]
                lat = measured_latency(to_pcm(sc.near_only), out_near)
                erle = echo_removed_db(mic, out, sc.far_alone, lat)
                r = results[engine]
                r["erle_worst" if is_worst else "erle"].append(erle)
                r["after_change"].append(echo_removed_db(mic, out, (sc.after_change,), lat))
                r["dt_loss"].append(near_loss_db(out, out_near, sc.double_talk))
                r["na_loss"].append(near_loss_db(out, out_near, sc.near_alone))
                r["cpu"].append(1000.0 * float(res["cpu_s"]) / (len(mic) / RATE))
                r["latency"].append(1000.0 * lat / RATE)
                if not np.isnan(float(res["delay_ms"])):
                    r["delay_err"].append(abs(float(res["delay_ms"]) - sc.delay_ms))
                line.append(f"{engine} {erle:.1f}/{r['after_change'][-1]:.1f}/{r['dt_loss'][-1]:.2f}")
            print("  ".join(line), flush=True)
    print()
    print("| | " + " | ".join(engines) + " |")
    print("|---|" + "---|" * len(engines))
    for label, key, how in ROWS:
        cells = []
        for engine in engines:
            vals = results[engine][key]
            if not vals:
                cells.append("n/a")
                continue
            value = min(vals) if how == "min" else statistics.fmean(vals)
            cells.append(f"{value:.1f}" if key not in ("dt_loss", "na_loss") else f"{value:.2f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"\n{len(plan)} scenarios ({rooms} random rooms, {worst} worst case), 20 s each, 16 kHz, "
          "10 ms periods, engines not told the delay. Load average at the end: "
          + ", ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
