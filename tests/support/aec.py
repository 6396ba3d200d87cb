"""Small synthetic echo scenarios for the echo-canceller tests (no room simulator)."""

from __future__ import annotations

import numpy as np

from edgevoice.audio.aec.selftest import probe_signal
from edgevoice.audio.frames import SAMPLE_RATE, Pcm


def room_ir(seed: int = 3, rt60_s: float = 0.25, taps: int = 1600) -> np.ndarray:
    """A direct path plus an exponentially decaying random tail."""
    rng = np.random.default_rng(seed)
    t = np.arange(taps) / SAMPLE_RATE
    ir = rng.standard_normal(taps) * 0.15 * np.exp(-6.9 * t / rt60_s)
    ir[:20] = 0.0
    ir[20] = 1.0
    return ir


def echo_scenario(seconds: float = 6.0, delay_ms: float = 60.0, echo_db: float = -6.0,
                  seed: int = 1, drift_ppm: float = 0.0) -> tuple[Pcm, Pcm]:
    """(mic, reference): speech-shaped bursts played, heard through a room after a delay,
    with noise 45 dB below the echo."""
    ref = probe_signal(seconds, -18.0, seed=seed)
    x = ref.astype(np.float64) / 32768.0
    if drift_ppm:
        x = np.interp(np.arange(len(x)) * (1 + drift_ppm * 1e-6), np.arange(len(x)), x, right=0.0)
    bulk = int(delay_ms * SAMPLE_RATE / 1000)
    echo = np.convolve(np.concatenate((np.zeros(bulk), x)), room_ir(seed))[: len(x)]
    echo *= 10 ** (echo_db / 20) * np.sqrt(np.mean(x ** 2) / (np.mean(echo ** 2) + 1e-20))
    rng = np.random.default_rng(seed + 100)
    mic = echo + rng.standard_normal(len(x)) * np.sqrt(np.mean(echo ** 2)) * 10 ** (-45 / 20)
    return to_pcm(mic), ref


def to_pcm(x: np.ndarray) -> Pcm:
    out: Pcm = np.clip(np.rint(x * 32768.0), -32768, 32767).astype(np.int16)
    return out


def erle_db(mic: Pcm, out: Pcm, start_s: float, latency_ms: float = 0.0) -> float:
    """Echo removed from ``start_s`` on (the far end alone)."""
    lat = int(latency_ms * SAMPLE_RATE / 1000)
    s = int(start_s * SAMPLE_RATE)
    n = len(out) - lat
    m = mic[s:n].astype(np.float64)
    o = out[s + lat:n + lat].astype(np.float64)
    return 10.0 * float(np.log10((m @ m + 1e-9) / (o @ o + 1e-9)))
