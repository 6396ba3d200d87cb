"""The bulk-delay estimator finds known delays, follows drift and ignores no-echo input."""

from __future__ import annotations

import numpy as np
import pytest
from support.aec import echo_scenario

from edgevoice.audio.aec.delay import DelayEstimator, estimate_delay
from edgevoice.audio.aec.selftest import measure_delay


@pytest.mark.parametrize("delay_ms", [0.0, 20.0, 95.0, 250.0, 480.0])
def test_finds_known_delays(delay_ms: float) -> None:
    mic, ref = echo_scenario(seconds=4.0, delay_ms=delay_ms, seed=int(delay_ms) + 1)
    found = estimate_delay(mic.astype(np.float64), ref.astype(np.float64), max_delay_ms=500.0)
    assert found is not None
    # the room's direct path arrives 20 samples after the bulk delay
    assert abs(found - (delay_ms * 16 + 20)) <= 8


def test_follows_clock_drift() -> None:
    mic, ref = echo_scenario(seconds=8.0, delay_ms=100.0, drift_ppm=300.0)
    est = DelayEstimator()
    seen = []
    for start in range(0, len(mic) - 160, 160):
        if est.push(mic[start:start + 160].astype(np.float64), ref[start:start + 160].astype(np.float64)):
            seen.append(est.delay_samples)
    assert seen
    # a fast speaker clock: the echo arrives ever earlier (300 ppm = 4.8 samples/s)
    assert seen[0] is not None and seen[-1] is not None
    assert seen[-1] < seen[0]


def test_no_estimate_without_an_echo() -> None:
    rng = np.random.default_rng(3)
    mic = rng.standard_normal(16000 * 3) * 1000
    _, ref = echo_scenario(seconds=3.0)
    assert estimate_delay(mic, ref.astype(np.float64)) is None


def test_no_estimate_while_the_reference_is_silent() -> None:
    mic, _ = echo_scenario(seconds=2.0)
    assert estimate_delay(mic.astype(np.float64), np.zeros(len(mic))) is None


def test_full_rate_measurement_is_sample_exact() -> None:
    mic, ref = echo_scenario(seconds=3.0, delay_ms=37.5)
    lag, confidence = measure_delay(mic.astype(np.float64), ref.astype(np.float64))
    assert lag == 600 + 20 and confidence > 8.0


def test_period_length_does_not_change_the_estimate() -> None:
    """The estimator buffers whatever it is fed until a hop is complete: half periods
    (twice as many pushes per hop) give the same decimated signals, so the same delay."""
    mic, ref = echo_scenario(seconds=3.0, delay_ms=60.0)
    m = mic.astype(np.float64)
    r = ref.astype(np.float64)
    whole = DelayEstimator(hop_periods=16)
    halves = DelayEstimator(hop_periods=32)
    for start in range(0, len(m) - 160, 160):
        whole.push(m[start:start + 160], r[start:start + 160])
        halves.push(m[start:start + 80], r[start:start + 80])
        halves.push(m[start + 80:start + 160], r[start + 80:start + 160])
    assert whole.delay_samples is not None
    assert halves.delay_samples == whole.delay_samples
    assert halves.confidence == whole.confidence
