"""Is the echo canceller's error explained by the far-end reference? Per band.

After the echo path changes (the device moved, a door, a person between loudspeaker and
mic) and while a person talks over the device, the error looks the same to the rest of
the engine: much more power than the filter expects. They differ in one thing: the error
a changed path leaves is the reference through a filter the engine does not yet have, so
it is *coherent* with the reference; a person's speech is not. That is measured here as
the share of the error's power that the recent reference explains linearly, per band:
the magnitude-squared coherence between the error spectrum and the reference spectrum of
each of the last :data:`LAGS` blocks (80 ms from the filter's start: the direct sound and
early reflections, which a change replaces), summed over those lags, over the band's
bins. A finite average reads some coherence for signals with nothing in common; that
bias is tracked (the same average of |E|^2 |X_k|^2 with the weights squared) and taken
off, so it is right also just after a person's onset, when a few loud blocks dominate
the average. The sum over lags overcounts a coherent error a little (the blocks' frames
overlap by half); it is a detector, not a measurement.

:class:`ChangedPath` is what the engine does with it: it re-opens the Kalman filter's
adaptation, and lets the leak estimate keep learning, only where the share is high, and
it tells the barge-in detector how much echo the output still holds
(:meth:`ChangedPath.left_in_output`).
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
_sum = np.add.reduce  # ndarray.sum without its Python-level wrapper

RATE = 0.08  # per-block smoothing rate (~0.12 s): a new path shows within a few blocks
# The error's power is also followed fast, and the share taken against the larger of the
# two: at a person's onset the slow averages still hold the echo before it, and would
# call the first syllables explained.
FAST_RATE = 0.3
LAGS = 8  # reference blocks the error is compared with (80 ms from the filter's start)
# Band edges in bins (50 Hz each at 16 kHz): under 200 Hz a small loudspeaker plays
# nothing; above 6.4 kHz speech has little echo to judge by.
BAND_EDGES = (4, 10, 18, 30, 48, 80, 128)
# What the engine does with it (ChangedPath; tuned on bench/aec_rooms' tuning rooms only):
COHERENT = 0.1  # a band is the reference's from this share of its error (bias taken off)
ERROR_RISE = 8.0  # ... and only while the error stands this many times its usual share of the mic
USUAL_RATE = 0.002  # per-block rate at which that usual share follows the error up (~5 s)
PLAYING = 0.1  # ... and only while the last LAGS blocks' reference is within 10 dB of its peak,
PAUSE_COHERENT = 0.2  # ... or, in the reference's pauses, from this share
PEAK_DECAY = 0.995  # per block: the reference's peak falls 10 dB in ~4.6 s
PERSIST = 3  # blocks in a row all that must hold before P moves (a person's onset can pass for 2-3)
REOPEN = 8.0  # P covers this many times the coherent error's power ...
REOPEN_STEP = 8.0  # ... rising by at most this factor per block
# What the barge-in detector is told is echo left in the output (the engine's stats): the
# error the reference explains, through the suppressor's gains, this many times over, while
# the bands' mean share reaches LEFT_SHARE. The share under-reads a changed path's error
# (0.10-0.16 in tuning room r20 while all of its 10 dB rise was echo: 80 ms of lags against
# a longer tail, the bias taken off); a person reads 0.00-0.03 (tuning room r39, -12 dB
# under the echo). Chosen on bench/aec_rooms' tuning rooms (docs/aec.md, twelfth round):
# 8-16x at 0.08 left every interruption's latency as it was; 32x, or 0.05, delayed one.
LEFT_SHARE = 0.08
LEFT_COVER = 12.0


class ReferenceCoherence:
    """Per block: :meth:`update` with the error spectrum and the reference's history;
    then :attr:`share` (per band) and :attr:`total` (their mean) say which part of the
    error the reference explains, 0-1, bias taken off. The arithmetic is the kernel's
    (``coherence``: the compiled one or :class:`.numpy_kernel.NumpyKernel`); the state
    lives here."""

    def __init__(self, kernel: ModuleType | NumpyKernel, *, lags: int | None = None,
                 rate: float | None = None, edges: tuple[int, ...] = BAND_EDGES) -> None:
        self._kernel = kernel
        self._lags = LAGS if lags is None else lags
        self._rate = RATE if rate is None else rate
        self._edges = np.asarray(edges, dtype=np.intp)
        self._lo, self._hi = edges[0], edges[-1]
        self._band_of_bin = np.repeat(np.arange(len(edges) - 1), np.diff(edges))
        self.reset()

    def reset(self) -> None:
        width = self._hi - self._lo
        self._s = np.zeros((self._lags, width), dtype=np.complex64)
        # row 0: the error's smoothed power; rows 1..: the reference's per lag
        self._pow = np.full((self._lags + 1, width), 1e-12, dtype=np.float32)
        self._bias = np.zeros((self._lags, width), dtype=np.float32)
        self._fast = np.full(len(self._edges) - 1, 1e-12)  # the error's power per band, fast
        self.share = np.zeros(len(self._edges) - 1)
        self.total = 0.0

    def update(self, E: _Complex, X: _Complex, px: _Floats) -> float:
        """One block: ``E`` the error spectrum, ``X`` the reference spectra and ``px``
        their powers |X|^2, newest first (at least :data:`LAGS` rows). Returns
        :attr:`total`."""
        self.total = float(self._kernel.coherence(
            E, X, px, self._s, self._pow, self._bias, self._fast, self.share, self._edges,
            self._rate, FAST_RATE))
        return self.total

    @property
    def error_power(self) -> _Floats:
        """The error's smoothed power per bin over the bands' bins (bin ``BAND_EDGES[0]``
        first)."""
        power: _Floats = self._pow[0]
        return power

    def bin_share(self, least: float = 0.0) -> _Floats:
        """:attr:`share` spread over the bands' bins; 0 in bands below ``least``."""
        share = np.where(self.share >= least, self.share, 0.0)
        out: _Floats = share[self._band_of_bin]
        return out

    def explained_power(self, gain: _Floats) -> float:
        """The error power the reference explains, through ``gain`` (the suppressor's per
        bin, all bins), summed over the bands' bins."""
        g = gain[self._lo:self._hi]
        return float(_sum(g * g * self.bin_share() * self._pow[0]))

    @property
    def bins(self) -> tuple[int, int]:
        """The first bin and one past the last that the bands cover."""
        return self._lo, self._hi


class ChangedPath:
    """Tells a changed echo path from a person talking, and re-opens the Kalman filter
    where the path changed.

    After the echo path changes, the error holds far more than the filter expects, and
    so it does while a person talks: the suppressor takes both for a person, which
    freezes the leak estimate, and the filter's small uncertainty P keeps its gain small.
    :meth:`follow` says True (a changed path) when the bands' mean share of error the
    reference explains is at least :data:`COHERENT` (:data:`PAUSE_COHERENT` in the
    reference's pauses, 10 dB under its recent peak) while the error stands
    :data:`ERROR_RISE` times its usual share of the mic (a change, not the steady residual
    of drift or a clipping loudspeaker, which is partly coherent too). Then, in each band
    whose share reaches :data:`COHERENT`, P grows (at most :data:`REOPEN_STEP` x per block,
    up to its initial value) until the expected residual (sum of P |X|^2) covers
    :data:`REOPEN` x the error power the reference explains there. A person's speech is
    not coherent with the reference, so double talk leaves P as it was.
    Tuned on bench/aec_rooms' tuning rooms only: re-opening more (a lower share, a larger
    cover) re-converges faster but costs the person in double talk, through the few
    blocks a person's onset reads as coherent."""

    def __init__(self, kernel: ModuleType | NumpyKernel) -> None:
        self.coherence = ReferenceCoherence(kernel)
        self.reset()

    def reset(self) -> None:
        self.coherence.reset()
        self._usual = 1.0  # the error's usual share of the mic (follows down at once)
        self._peak = 0.0  # the reference's recent peak power over the bands and lags
        self._run = 0  # blocks in a row that read as a changed path

    def follow(self, E: _Complex, X: _Complex, px: _Floats, *, error_share: float, P: _Floats,
               residual_lin: _Floats, p_initial: float) -> bool:
        """One far-end-active block: ``E`` the filter's error spectrum, ``X``/``px`` the
        reference spectra and powers (newest first), ``error_share`` the error's smoothed
        energy over the mic's, ``P`` the filter's uncertainty (raised in place) and
        ``residual_lin`` half its expected residual (sum of P |X|^2). True for a changed
        path."""
        coh = self.coherence
        share = coh.update(E, X, px)
        usual = self._usual = min(error_share, self._usual + USUAL_RATE * (error_share - self._usual))
        lo, hi = coh.bins
        # In a pause between the device's words the reference holds only the end of the
        # last one: there a person's voiced sounds can line up with it for a moment
        # (bench/aec's worst room read 0.3-0.5 in the lowest bands for 150 ms; 0.16 over
        # the bands, on one take of its speech), and so can the steady residual (0.13-0.19),
        # whose share of the falling mic rises as much as a changed path's error (8-26x in
        # bench/aec's barge-in trial 21: re-opened there from 0.12, the person's next onset
        # was heard 350 ms later). A changed path keeps its error coherent through the pauses too
        # (0.2-0.32 in most tuning rooms; a door's late tail 0.11-0.2, docs/aec.md, thirteenth
        # round), and holding it shut there until the next loud syllable slows re-convergence
        # in reverberant rooms, where the reference rarely stands near its peak.
        playing = float(_sum(px[:LAGS, lo:hi], axis=None))
        self._peak = max(playing, PEAK_DECAY * self._peak)
        pause = playing < PLAYING * self._peak
        if share < (PAUSE_COHERENT if pause else COHERENT) or error_share < ERROR_RISE * usual:
            self._run = 0
            return False
        self._run += 1
        if self._run < PERSIST:
            return False
        coherent = coh.bin_share(COHERENT) * coh.error_power
        expected = 2.0 * residual_lin[lo:hi] + 1e-12
        ratio = np.clip(REOPEN * coherent / expected, 1.0, REOPEN_STEP)
        rows = P[:, lo:hi]
        rows *= ratio.astype(P.dtype)
        np.minimum(rows, p_initial, out=rows)
        return True

    def left_in_output(self, gain: _Floats) -> float:
        """Echo still in the output that the filter's misadjustment does not account for:
        the error the reference explains through the suppressor's ``gain``,
        :data:`LEFT_COVER` times over, while the bands' mean share reaches
        :data:`LEFT_SHARE` (0 otherwise), in the spectra's power units. Between an echo
        path change and the filter's re-convergence this is the leak a person's voice
        must stand over; a person's own speech reads no share and adds nothing."""
        coh = self.coherence
        return LEFT_COVER * coh.explained_power(gain) if coh.total >= LEFT_SHARE else 0.0
