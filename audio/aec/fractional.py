"""The fractional-delay interpolator the echo canceller reads its reference through.

Clock drift slides the echo through the filter; the canceller reads the reference at the
measured drift rate, between samples, with an 8-tap Hann-windowed sinc. The taps are
tabulated at 1/512-sample steps once, at import.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

_Floats = npt.NDArray[np.floating[Any]]
TAPS = 8


def fractional_taps(frac: float) -> _Floats:
    """8-tap Hann-windowed sinc that delays by ``frac`` (0..1) samples."""
    t = np.arange(TAPS) - (TAPS // 2 - 1) - frac
    taps: _Floats = np.sinc(t) * (0.5 + 0.5 * np.cos(np.pi * t / (TAPS // 2 + 1)))
    normalised: _Floats = taps / taps.sum()
    return normalised


TAP_STEPS = 512
TAP_TABLE = np.stack([fractional_taps(i / TAP_STEPS) for i in range(TAP_STEPS + 1)])
# reversed, for np.correlate: the same convolution without np.convolve's wrapper
TAP_TABLE_REV = np.ascontiguousarray(TAP_TABLE[:, ::-1])
