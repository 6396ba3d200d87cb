"""The loudspeaker's distortion left in the echo canceller's error: echo the linear filter
cannot take, so the residual-echo suppressor must.

A small loudspeaker driven hard clips and resonates. What it adds is not linear in the
reference, so the Kalman filter cannot model it, and the suppressor, whose residual-echo
estimate is the filter's own expected misadjustment, let it through: on the clipping rooms
of ``bench/aec_rooms`` (distortion 13-18 dB under the linear part) the engine removed
24-29 dB of echo where the room's noise would have let it show 34-49 (docs/aec.md,
eleventh round).

Clipping spreads the echo's energy across frequency (harmonics, intermodulation), so the
distortion in a bin follows the echo's power over a wide stretch of bins around it. The
estimate, per block: the echo estimate's power averaged over ``SPREAD_BINS`` either side;
per band, the regression of the error's power fluctuations on that spread power's
fluctuations (speex's leak estimate, :mod:`.leak`, per band and widened in frequency); the
distortion is each band's share times the spread power. Fluctuations, because the room's
steady noise does not follow the echo. It learns only while nobody is judged to be talking
(a person's onsets over the device's words would read as distortion), and it is handed to
the suppressor only then too: while someone talks the person keeps their bins, and the
linear estimate, which near-end speech cannot inflate, still covers the echo. The
arithmetic is the kernel's (``distortion``: the compiled one or
:class:`.numpy_kernel.NumpyKernel`); the state lives here.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from edgevoice.audio.aec.numpy_kernel import NumpyKernel

_Floats = npt.NDArray[np.floating[Any]]
_Complex = npt.NDArray[np.complexfloating[Any, Any]]

# Chosen on bench/aec_rooms' tuning rooms: ±24 bins (±1.2 kHz at 50 Hz a bin) took 2 dB more
# echo than ±8 for 0.02 dB more near-end loss (eleventh round). On the corpus's still take
# ±28 (±1.4 kHz) takes 0.5 dB more than ±24 at the same loss and barge-in; ±32 took 0.9 but
# stopped the device 120-220 ms later in two rooms' interruptions (docs/aec.md, fifteenth round).
SPREAD_BINS = 28
BANDS = 10  # equal-width bands the share is learnt in (800 Hz each at 161 bins)
MEAN_RATE = 0.05  # per-block rate of the power means the fluctuations are taken from
RATE = 0.005  # per-block rate of the regression (~2 s)


class DistortionResidual:
    """Per far-end-active block: :meth:`update` with the error and the echo estimate."""

    def __init__(self, kernel: ModuleType | NumpyKernel, bins: int, dtype: Any) -> None:
        self._kernel = kernel
        self._edges = np.linspace(0, bins, BANDS + 1).astype(np.intp)
        self._out = np.zeros(bins, dtype=dtype)
        self._means = np.zeros((2, bins))
        self._fits = np.zeros((2, BANDS))
        self.reset()

    def reset(self) -> None:
        self._means.fill(0.0)
        self._fits[0] = 0.0
        self._fits[1] = 1e-12

    @property
    def share(self) -> _Floats:
        """Per band: the share of the spread echo power that is distortion in the error."""
        share: _Floats = np.clip(self._fits[0] / (self._fits[1] + 1e-12), 0.0, 1.0)
        return share

    def update(self, E: _Complex, Y: _Complex, talking: bool) -> _Floats:
        """One block: ``E`` the main filter's error spectrum, ``Y`` its echo estimate,
        ``talking`` the suppressor's judgement of the block before. Returns the distortion
        power per bin for the suppressor (zeros while someone talks; valid until the next
        block)."""
        self._kernel.distortion(E, Y, self._means, self._fits, self._edges, self._out, SPREAD_BINS,
                                MEAN_RATE, RATE, talking)
        return self._out
