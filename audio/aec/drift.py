"""Clock drift in the echo canceller's filter: how far the echo moved between two looks at
the filter, and moving the filter's taps when the reference read cannot follow.

The canceller follows drift by reading the reference at the measured rate (through
:mod:`.fractional`): the echo path the filter sees stands still. An echo that arrives ever
earlier needs the read ever sooner, and a read cannot be sooner than now: where the bulk
delay is already nothing (the loudspeaker close to the microphone, little buffering) the
taps themselves are moved earlier instead, by the part of the drift the read cannot take.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

_Complex = npt.NDArray[np.complexfloating[Any, Any]]
# bins 4-99 of 320 (200 Hz - 5 kHz): above the loudspeaker's high-pass, below a phase wrap
DRIFT_BINS = np.arange(4, 100)


def measured_shift(snapshot: _Complex, old: _Complex, fft_size: int) -> float:
    """Samples the echo moved later in the filter from ``old`` to ``snapshot`` (partitions x
    bins): the phase slope of their cross-spectrum, summed over the partitions (a shift of
    tau samples is a phase of -2 pi f tau / fft_size), by weighted least squares through the
    origin."""
    cross = np.einsum("kf,kf->f", snapshot, np.conj(old))[DRIFT_BINS]
    weight = np.abs(cross)
    freqs = DRIFT_BINS.astype(np.float64)
    slope = float(np.sum(weight * freqs * np.angle(cross)) / (np.sum(weight * freqs ** 2) + 1e-30))
    return -slope * fft_size / (2.0 * np.pi)


def shift_earlier(filters: Iterable[_Complex], samples: float, fft_size: int) -> None:
    """Move each filter's echo path ``samples`` earlier, in place: a phase ramp on every
    partition's spectrum (h(n + samples)). Each partition's taps move within its own frame,
    so the few that leave a partition's start are dropped (its gradient constraint clears
    them) and re-learnt: at 150 ppm that is 0.024 samples a 10 ms block."""
    ramp = np.exp(2j * np.pi * np.arange(fft_size // 2 + 1) * (samples / fft_size))
    for taps in filters:
        np.multiply(taps, ramp.astype(taps.dtype), out=taps)
