"""The drift helpers (audio/aec/drift.py), pure: the shift measured between two looks at a
filter, and moving a filter's echo path earlier by a fraction of a sample."""

from __future__ import annotations

import numpy as np
import pytest

from edgevoice.audio.aec.drift import measured_shift, shift_earlier

M = 320  # the engine's FFT size: 160-sample partitions, zero-padded


def partitions(first_tap: float, count: int = 4) -> np.ndarray:
    """A filter of ``count`` partitions, each holding a band-limited echo (a sinc) peaking at
    ``first_tap`` samples into its 160 taps, with a decaying tail."""
    n = np.arange(M)
    taps = np.zeros((count, M))
    for k in range(count):
        taps[k, :160] = np.sinc(n[:160] - first_tap) * 0.5 ** k + 0.05 * np.sinc(n[:160] - first_tap - 30)
    return np.fft.rfft(taps, axis=1).astype(np.complex64)


@pytest.mark.parametrize("moved", [0.3, 1.2, -0.8])
def test_the_measured_shift_is_how_far_the_echo_moved_in_the_filter(moved: float) -> None:
    before, after = partitions(60.0), partitions(60.0 + moved)
    assert measured_shift(after, before, M) == pytest.approx(moved, abs=0.02)


def test_shifting_earlier_moves_the_echo_path_by_that_fraction_of_a_sample() -> None:
    filters = partitions(60.0)
    original = filters.copy()
    shift_earlier([filters], 0.7, M)
    # the same echo, 0.7 samples sooner: measured against the original, and in the taps
    assert measured_shift(filters, original, M) == pytest.approx(-0.7, abs=0.02)
    taps = np.fft.irfft(filters, M, axis=1)
    assert np.allclose(taps[:, :160], np.fft.irfft(partitions(59.3), M, axis=1)[:, :160], atol=2e-3)
    assert filters.dtype == np.complex64  # in place, in the engine's precision
