"""How much echo leaks through the echo canceller's linear filter (speex's MDF estimate).

The regression of the error's per-bin power fluctuations on the echo estimate's: what
share of the echo estimate's power is still in the error. It is updated more slowly when
the error dwarfs the echo estimate, and not at all while someone is judged to be talking
(a person's onsets over the device's words would read as leak). Its usual level follows
it down at once and up slowly, so ``leak / usual`` rises after an echo-path change, not
with a loudspeaker's steady distortion. The engine uses both to re-open its Kalman filter
(:meth:`LeakEstimate.reopen`). The per-bin arithmetic is the kernel's (``leak``: the compiled
one or :class:`.numpy_kernel.NumpyKernel`, one call where numpy took sixteen); the state
and the per-block recursion live here.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from edgevoice.audio.aec.numpy_kernel import NumpyKernel

_Floats = npt.NDArray[np.floating[Any]]
_Complex = npt.NDArray[np.complexfloating[Any, Any]]

MEAN_RATE = 0.05  # per-block rate of the per-bin power means the fluctuations are taken from
LEAK_RATE = 0.005  # fastest per-block update of the leak estimate (~2 s)
USUAL_RATE = 0.001  # per-block rate at which the leak's usual level follows it up (~10 s)
# Re-opening the Kalman filter for a leak (tuned on bench/aec_rooms' tuning rooms only):
LEAK_RISE = 2.0  # only while the leak is this many times its usual level
REOPEN = 3.0  # the expected residual is raised to cover this many times the leaked echo
REOPEN_STEP = 2.0  # at most this factor on P per block
REOPEN_EXPLAINED = 0.25  # only while the leaked echo is at least this share of the error


class LeakEstimate:
    """Per block: :meth:`update` with the error and echo-estimate spectra."""

    def __init__(self, kernel: ModuleType | NumpyKernel, bins: int, dtype: Any) -> None:
        self._kernel = kernel
        self._means = np.zeros((2, bins), dtype=dtype)  # the error's and the echo estimate's power
        self._py = np.zeros(bins, dtype=dtype)
        self.reset()

    def reset(self) -> None:
        self._means.fill(0.0)
        self._pey = 0.0
        self._pyy = 1e-12
        self.leak = 0.0  # share of the echo estimate's power still in the error
        self.usual = 0.0  # the leak's usual level
        self.error_sum = 1e-12  # this block's error power, summed over bins
        self.echo_sum = 0.0  # this block's echo-estimate power, summed over bins

    def update(self, E: _Complex, Y: _Complex, talking: bool) -> _Floats:
        """One block; returns the echo estimate's power per bin (|Y|^2, valid until the
        next block)."""
        # the fluctuations from the means, which follow the talk too, so they stand where it ends
        see, syy, pey, pyy = self._kernel.leak(E, Y, self._means, self._py, MEAN_RATE)
        norm = math.sqrt(pyy) + 1e-12  # each block's terms scale-free, as in speex
        see = self.error_sum = see + 1e-12
        self.echo_sum = syy
        alpha = 0.0 if talking else min(LEAK_RATE, 4.0 * LEAK_RATE * syy / see)
        self._pey = (1.0 - alpha) * self._pey + alpha * pey / norm
        self._pyy = (1.0 - alpha) * self._pyy + alpha * pyy / norm
        leak = self.leak = max(0.0, min(1.0, self._pey / (self._pyy + 1e-12)))
        self.usual = min(leak, self.usual + USUAL_RATE * (leak - self.usual))
        return self._py

    def reopen(self, E: _Complex, Y: _Complex, talking: bool, *, P: _Floats, residual_lin: _Floats,
               p_initial: float) -> None:
        """One block (:meth:`update`), then re-open the Kalman filter's uncertainty ``P``
        where echo suddenly leaks through it; ``talking``: someone talks and the error is not
        the reference's, ``residual_lin`` the last block's expected residual / 2.

        After the echo path changes (the device moved, a door, a person in the path) the
        converged filter is sure of its old taps: its small uncertainty P keeps its gain
        small, so it re-learns slowly, and the suppressor, which takes its residual-echo
        estimate from the same P, lets the new residual through. The shadow filter does
        not catch it in reverberant rooms (its 80 ms cannot beat the main filter by the
        margin a copy needs). While the leak stands at twice its usual level or more (a
        change, not the loudspeaker's steady distortion) and explains at least a quarter
        of the error, P grows, by at most 2x per block and up to its initial value, where
        the expected residual (sum of P |X|^2) is below 3x the leaked echo (leak x |Y|^2).
        (Covering the leak in the suppressor's estimate too was tried and not kept: it hid
        a person's onset, bench/aec's near-end loss 0.46 -> 1.13 dB; docs/aec.md.)
        Stronger settings re-converge faster but cost the person in double talk (near-end
        loss, PESQ)."""
        py = self.update(E, Y, talking)
        explained = self.leak * self.echo_sum >= REOPEN_EXPLAINED * self.error_sum
        if talking or self.leak < LEAK_RISE * self.usual or not explained:
            return
        expected = 2.0 * residual_lin + 1e-12  # the last block's sum of P |X|^2
        ratio = np.clip((REOPEN * self.leak) * py / expected, 1.0, REOPEN_STEP).astype(P.dtype)
        P *= ratio
        np.minimum(P, p_initial, out=P)
