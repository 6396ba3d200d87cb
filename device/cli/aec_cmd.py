"""``edgevoice aec`` (offline echo cancellation of two recordings) and
``edgevoice aec-selftest`` (probe the real echo path through the configured backend)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.audio.aec import ENGINES, PERIOD_SAMPLES
from edgevoice.audio.aec.selftest import measure_delay, run_selftest
from edgevoice.audio.frames import SAMPLE_RATE
from edgevoice.audio.io.wav import read_wav, write_wav
from edgevoice.device.assembly.audio_io import open_backend
from edgevoice.device.assembly.echo import build_canceller
from edgevoice.device.cli.common import EXIT_FAILURE, EXIT_OK, add_common_options, load, print_json


def register(sub: Any) -> None:
    aec = sub.add_parser("aec", help="cancel the echo in a mic recording given the speaker's signal")
    aec.add_argument("--mic", type=Path, required=True, help="microphone WAV (any rate; read as 16 kHz mono)")
    aec.add_argument("--ref", type=Path, required=True, help="what the speaker played (WAV)")
    aec.add_argument("--out", type=Path, required=True, help="echo-cancelled WAV to write")
    aec.add_argument("--engine", choices=ENGINES, help="override [aec] engine")
    add_common_options(aec, json_output=True)
    aec.set_defaults(func=_aec)
    test = sub.add_parser("aec-selftest",
                          help="play a probe, measure the echo path's delay and level and the echo removed")
    test.add_argument("--engine", choices=ENGINES, help="override [aec] engine")
    test.add_argument("--probe-s", type=float, default=4.0, help="probe length in seconds")
    add_common_options(test, json_output=True)
    test.set_defaults(func=_selftest)


def _far_end_erle(mic: np.ndarray, ref: np.ndarray, out: np.ndarray, delay: int,
                  latency: int) -> float | None:
    """Echo removed over the periods where the (delayed) reference is active, after 2 s."""
    n = (len(out) - latency) // PERIOD_SAMPLES * PERIOD_SAMPLES
    if n <= 0:
        return None
    shifted = np.zeros(n)
    shifted[delay:] = ref[: max(0, n - delay)].astype(np.float64)
    ref_p = (shifted.reshape(-1, PERIOD_SAMPLES) ** 2).mean(axis=1)
    active = ref_p > (32768.0 * 10 ** (-50 / 20)) ** 2
    active[: 2 * SAMPLE_RATE // PERIOD_SAMPLES] = False
    if not active.any():
        return None
    m = (mic[:n].astype(np.float64).reshape(-1, PERIOD_SAMPLES) ** 2).sum(axis=1)[active].sum()
    o = (out[latency:latency + n].astype(np.float64).reshape(-1, PERIOD_SAMPLES) ** 2).sum(axis=1)
    return 10.0 * float(np.log10((m + 1e-9) / (o[active].sum() + 1e-9)))


def _aec(args: argparse.Namespace) -> int:
    config = load(args).config
    mic, _ = read_wav(args.mic)
    ref, _ = read_wav(args.ref)
    canceller = build_canceller(config.aec, args.engine)
    try:
        started = time.process_time()
        out = canceller.process_signal(mic, ref)
        cpu_s = time.process_time() - started
        stats = canceller.stats
    finally:
        canceller.close()
    write_wav(args.out, out)
    seconds = len(out) / SAMPLE_RATE
    delay_ms = stats.delay_ms
    if delay_ms is None:
        lag, confidence = measure_delay(mic.astype(np.float64), ref.astype(np.float64))
        delay_ms = 1000.0 * lag / SAMPLE_RATE if confidence > 8.0 else None
    delay = 0 if delay_ms is None else int(delay_ms * SAMPLE_RATE / 1000)
    latency = int(canceller.latency_ms * SAMPLE_RATE / 1000)
    erle = _far_end_erle(mic, ref, out, delay, latency)
    result = {
        "engine": canceller.name,
        "delay_ms": None if delay_ms is None else round(delay_ms, 2),
        "erle_db": None if erle is None else round(erle, 2),
        "cpu_ms_per_s": round(1000.0 * cpu_s / max(seconds, 1e-9), 2),
        "seconds": round(seconds, 3),
        "out": str(args.out),
    }
    if args.json:
        print_json(result)
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return EXIT_OK


def _selftest(args: argparse.Namespace) -> int:
    config = load(args).config
    backend = open_backend(config.audio, config.room, config.wav)
    canceller = build_canceller(config.aec, args.engine)
    try:
        result = run_selftest(backend, canceller, probe_s=args.probe_s)
    finally:
        canceller.close()
    if args.json:
        print_json(result.as_dict())
    else:
        for key, value in result.as_dict().items():
            shown = f"{value:.1f}" if isinstance(value, float) else value
            print(f"{key}: {shown}")
        if not result.reference_ok:
            print("edgevoice: no echo of the probe was found: check the speaker, the volume and "
                  "[audio] reference_channel", file=sys.stderr)
    return EXIT_OK if result.reference_ok else EXIT_FAILURE
