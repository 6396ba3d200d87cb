"""Scores for one engine's output on one scenario (see bench/aec/bench.py)."""

from __future__ import annotations

import numpy as np

RATE = 16000
_BLOCK = 320  # 20 ms


def _span(a: float, b: float) -> slice:
    return slice(int(a * RATE), int(b * RATE))


def echo_removed_db(mic: np.ndarray, out: np.ndarray, spans: tuple[tuple[float, float], ...],
                    latency: int) -> float:
    """10 log10(mic power / output power) over the far-end-alone spans."""
    aligned = out[latency:].astype(np.float64)
    mic_e = out_e = 0.0
    for a, b in spans:
        s = _span(a, b)
        m = mic[s].astype(np.float64)
        o = aligned[s]
        n = min(len(m), len(o))
        mic_e += float(m[:n] @ m[:n])
        out_e += float(o[:n] @ o[:n])
    return 10.0 * float(np.log10(mic_e / max(out_e, 1e-9)))


def near_loss_db(out: np.ndarray, out_near: np.ndarray, span: tuple[float, float]) -> float:
    """How much of the near end the engine lost, against its own output on the near end
    alone (so fixed filtering is not counted): per 20 ms block the least-squares gain of
    that output inside the real output, averaged weighted by the block's energy. Echo
    residue is uncorrelated with the near end and averages out (the passthrough engine
    scores ~0 dB), while a suppressor that ducks the near end shows its loss."""
    s = _span(*span)
    a = out[s].astype(np.float64)
    b = out_near[s].astype(np.float64)
    n = min(len(a), len(b)) // _BLOCK * _BLOCK
    a = a[:n].reshape(-1, _BLOCK)
    b = b[:n].reshape(-1, _BLOCK)
    eb = np.einsum("ij,ij->i", b, b)
    keep = eb > eb.max() * 1e-4
    cross = float(np.einsum("ij,ij->i", a, b)[keep].sum())
    return -20.0 * float(np.log10(max(cross, 1e-12) / float(eb[keep].sum())))

def measured_latency(near: np.ndarray, out_near: np.ndarray, max_ms: float = 50.0) -> int:
    """Samples the engine delays the near end by: the cross-correlation peak between the
    near end at the mic and the engine's output on it (far end silent)."""
    max_lag = int(max_ms * RATE / 1000)
    a = near.astype(np.float64)
    b = out_near.astype(np.float64)
    n = min(len(a), len(b)) - max_lag
    scores = [float(a[:n] @ b[lag:lag + n]) for lag in range(max_lag + 1)]
    return int(np.argmax(scores))
