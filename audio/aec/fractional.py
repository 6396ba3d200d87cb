"""The fractional-delay interpolator the echo canceller reads its reference through.

Clock drift slides the echo through the filter; the canceller reads the reference at the
measured drift rate, between samples, with a 64-tap Hann-windowed sinc. The taps are
tabulated at 1/512-sample steps once, at import. 64 taps, not 8: the shorter
interpolator's error at high frequencies moves with the fractional offset, which the filter
cannot learn. On bench/aec_rooms' tuning rooms echo removed rose by 0.28 dB with 16 taps,
0.34 with 32 and 0.35 with 64 (up to 3 dB in a drift room); 16 and 32 each added a
self-interruption in the barge-in bench's tuning rooms, 64 none. The CPU is the same to
1 %. Within 32 samples of no delay at all the newest taps read zeros (the reference is not
there yet): the filter learns the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

_Floats = npt.NDArray[np.floating[Any]]
TAPS = 64


def fractional_taps(frac: float) -> _Floats:
    """``TAPS``-tap Hann-windowed sinc that delays by ``frac`` (0..1) samples."""
    t = np.arange(TAPS) - (TAPS // 2 - 1) - frac
    taps: _Floats = np.sinc(t) * (0.5 + 0.5 * np.cos(np.pi * t / (TAPS // 2 + 1)))
    normalised: _Floats = taps / taps.sum()
    return normalised


TAP_STEPS = 512
TAP_TABLE = np.stack([fractional_taps(i / TAP_STEPS) for i in range(TAP_STEPS + 1)])
# reversed, for np.correlate: the same convolution without np.convolve's wrapper
TAP_TABLE_REV = np.ascontiguousarray(TAP_TABLE[:, ::-1])
