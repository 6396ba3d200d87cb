"""The edgevoice engine's bookkeeping stays in step with the arrays it summarises."""

from __future__ import annotations

import numpy as np
from support.aec import echo_scenario

from edgevoice.audio.aec.engine import EdgevoiceCanceller


def test_row_power_sums_follow_the_history_through_a_delay_jump() -> None:
    # 40 ms of delay first, then 200 ms: the engine re-aligns and rebuilds its history
    mic_a, ref_a = echo_scenario(seconds=3.0, delay_ms=40.0, seed=2)
    mic_b, ref_b = echo_scenario(seconds=3.0, delay_ms=200.0, seed=3)
    mic = np.concatenate([mic_a, mic_b])
    ref = np.concatenate([ref_a, ref_b])
    aec = EdgevoiceCanceller()
    bulks = set()
    for start in range(0, len(mic), 160):
        aec.process(mic[start:start + 160], ref[start:start + 160])
        bulks.add(aec._bulk)
        pxk = aec._ph.view
        k = len(aec._row_sums)
        expected = pxk.astype(np.float64).sum(axis=1)
        got = np.array([aec._row_sums[(aec._row_at + j) % k] for j in range(k)])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-9)
    assert len(bulks) >= 3  # no delay, then two different delays: the history was rebuilt


def test_pending_constraint_is_applied_before_the_filter_is_read() -> None:
    """The gradient constraint of the last block is finished with the next block's FFT;
    anything reading the filter in between (a snapshot for drift) must see it done."""
    mic, ref = echo_scenario(seconds=4.0, delay_ms=60.0)
    aec = EdgevoiceCanceller()
    start = 0
    while start < 3 * 16000 or aec._constrained is None:  # converged, a constraint waiting
        aec.process(mic[start:start + 160], ref[start:start + 160])
        start += 160
    j = aec._constrained[0]
    taps = np.fft.irfft(aec._W[j].astype(np.complex128))
    assert np.abs(taps[160:]).max() > 1e-3 * np.abs(taps).max()  # not constrained yet
    aec._flush_constrained()
    assert aec._constrained is None
    # the partition's taps now have an empty second half (float32 round trip aside)
    taps = np.fft.irfft(aec._W[j].astype(np.complex128))
    assert np.abs(taps[160:]).max() <= 1e-5 * np.abs(taps).max()
