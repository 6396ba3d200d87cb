"""edgevoice's own echo canceller (the default engine).

numpy, vectorised per 10 ms block, its per-block arithmetic in a kernel: the compiled
one (:mod:`.kernel`) or its numpy twin (:mod:`.numpy_kernel`, the reference);
frame-synchronous input, 10 ms added latency (the residual-echo suppressor's
overlap-add). Built from:

1. **Bulk delay** (:mod:`.delay`): GCC-PHAT on 4 kHz signals with a time-averaged
   cross-spectrum. The reference is delayed by the estimate (minus a small margin) in
   whole 10 ms steps; when the echo would leave the filter (a new device, a moved
   path) the filter's partitions are shifted with the delay, so nothing is re-learned.
2. **Clock drift**: a USB mic and a separate speaker drift by up to ±100 ppm, which
   slides the echo through the filter faster than it can re-learn at high frequencies.
   Every 0.5 s the phase slope between the filter and its previous snapshot measures
   how far the echo moved; an integrating loop turns that into a drift rate, and the
   reference is read at that rate through a 64-tap fractional-delay interpolator
   (:mod:`.fractional`), so the echo path the filter sees stands still. Where the read
   cannot be sooner (the echo under the margin), the taps move instead (:mod:`.drift`).
3. **Linear echo path**: a partitioned-block frequency-domain Kalman filter
   (Kuech et al. 2014; 160-sample partitions, 320-point FFTs, one partition
   gradient-constrained per block). Its gain weighs the filter's own uncertainty
   against the error power: fast while uncertain, nearly frozen while someone talks,
   with no double-talk detector to mis-fire.
4. **Shadow filter**: a short fixed-step NLMS filter over the first partitions. It
   re-learns a moved echo path within a second; a clearly better shadow is copied into
   the main filter and re-opens its uncertainty. Where it cannot (reverberant rooms, a
   partly changed path), the error's coherence with the reference, per band, tells a
   changed path (coherent) from a person talking (not), and re-opens the main filter's
   uncertainty where the reference explains the error
   (:class:`.coherence.ChangedPath`); and a leak estimate (speex's: the error's
   power fluctuations against the echo estimate's) re-opens it while echo suddenly leaks
   through it (:meth:`.leak.LeakEstimate.reopen`).
5. **Residual echo suppressor**: a Wiener-style gain per bin from the residual-echo
   estimate — the Kalman filter's own expected misadjustment, which near-end speech
   cannot inflate, plus, while nobody talks, the loudspeaker's distortion that the linear
   filter cannot take (:mod:`.distortion`) — against the error power, with an
   overestimate, a release like the room's, a floor; sqrt-Hann overlap-add. Off if no
   echo is heard (:mod:`.echo_presence`).

Cost: at 320 points numpy's per-call overhead, not the arithmetic, is what a block
costs, so it is few calls on few arrays: four FFT calls (the input frame with last
block's constrained partitions; both filters' echo estimates; both errors with the
suppressor's frame; the constraint with its output) around eight kernel calls, histories
in ring buffers (:mod:`.ring`), the filters and the suppressor in float32/complex64.
"""

from __future__ import annotations

import logging
import math
from types import ModuleType
from typing import Any

import numpy as np

from edgevoice.audio.aec.base import AecStats, EchoCanceller, check_period
from edgevoice.audio.aec.coherence import ChangedPath
from edgevoice.audio.aec.delay import DelayEstimator
from edgevoice.audio.aec.distortion import DistortionResidual
from edgevoice.audio.aec.drift import measured_shift, shift_earlier
from edgevoice.audio.aec.echo_presence import EchoPresence
from edgevoice.audio.aec.fft import rfft
from edgevoice.audio.aec.fractional import TAP_STEPS, TAP_TABLE_REV, TAPS
from edgevoice.audio.aec.kernel import choose_kernel
from edgevoice.audio.aec.leak import LeakEstimate

# The block's sizes and the precision are the numpy path's: one definition, so the engine
# and its reference path cannot drift apart.
from edgevoice.audio.aec.numpy_kernel import (
    _CPLX,
    _F,
    _M,
    _N,
    _REAL,
    NumpyKernel,
    _Complex,
    _Floats,
    to_pcm,
)
from edgevoice.audio.aec.ring import RowHistory, SampleRing
from edgevoice.audio.frames import SAMPLE_RATE, Pcm

_LOGGER = logging.getLogger(__name__)
_DRIFT_EVERY = 50  # blocks between drift measurements
_MAX_DRIFT = 300e-6 * _N  # samples per block
_SCALE = 1.0 / 32768.0
_SETTLED = 1e-30  # residual-echo estimate below which the suppressor's gains are exactly 1
_COPY_SHADOW = 1  # the shadow filter is copied into the main one
_COPY_MAIN = 2  # the main filter is copied into the shadow
_LATE_REACH = 0.4  # share of the filter a later delay estimate may sit in without a move
_sum = np.add.reduce  # ndarray.sum without its Python-level wrapper


class EdgevoiceCanceller(EchoCanceller):
    """Delay + drift tracking, Kalman MDF, shadow NLMS and residual echo suppression."""

    name = "edgevoice"
    latency_ms = 1000.0 * _N / SAMPLE_RATE

    def __init__(self, *, filter_ms: int = 250, max_delay_ms: int = 500, shadow_ms: int = 80,
                 suppression_db: float = -40.0, overestimate: float = 6.0,
                 overestimate_talk: float = 1.0, talk_ratio: float = 4.0,
                 delay_margin_ms: int = 15, track_drift: bool = True, memory: float = 0.999,
                 reopen_on_leak: bool = True, reopen_on_coherence: bool = True,
                 model_distortion: bool = True, compiled: bool | None = None) -> None:
        compiled_kernel = choose_kernel(compiled)
        self._k = max(2, round(filter_ms * SAMPLE_RATE / 1000 / _N))
        # one block, two kernels: the C one, or its numpy twin when it is not built or not wanted
        self._kernel: ModuleType | NumpyKernel = (
            NumpyKernel(self._k) if compiled_kernel is None else compiled_kernel)
        # the per-period 320-point FFTs, into preallocated arrays: the C kernel's own (no
        # per-call plan) or numpy's pocketfft
        self._rfft: Any = self._kernel.rfft
        self._irfft: Any = self._kernel.irfft
        self._ks = max(1, min(self._k, round(shadow_ms * SAMPLE_RATE / 1000 / _N)))
        self._max_delay = SAMPLE_RATE * max_delay_ms // 1000
        self._margin = SAMPLE_RATE * delay_margin_ms // 1000
        # An estimate that moves later but stays this deep inside the filter moves nothing:
        # after a path change GCC-PHAT's peak often jumps to a reflection (the direct
        # sound shadowed, the loudspeaker aimed away), and moving the filter's start there
        # put the true first arrival before its first tap, where it cannot be cancelled.
        # An echo arriving earlier than the filter's start still moves it at once.
        self._late_reach = self._margin + int(_LATE_REACH * self._k * _N)
        self._floor = float(10.0 ** (suppression_db / 20.0))
        self._over = overestimate
        self._over_talk = overestimate_talk
        self._talk_ratio = talk_ratio
        self._track_drift = track_drift
        self._reopen_on_leak = reopen_on_leak
        self._model_distortion = model_distortion
        self._window = np.sqrt(np.hanning(_M + 1)[:_M]).astype(_REAL)
        self.idle_pass_through = True  # skip the suppressor's FFTs once it does nothing
        self._window_pcm = self._window * 32768.0  # synthesis window with the int16 scale
        self._window_both = self._window * self._window_pcm  # analysis x synthesis, gains 1
        self._delay_est = DelayEstimator(max_delay_ms=float(max_delay_ms))
        self._a2 = memory ** 2
        self._p_initial = 1.0
        self._far_threshold = 1e-6 * _M * _N * self._k
        self._silence = bytes(2 * _N)
        self._m_scale = 2.0 / self._k
        self._ref = SampleRing(self._max_delay + 4 * _N + TAPS, spare=64 * _N)
        self._xh = RowHistory(self._k, _F, _CPLX)  # reference spectra, newest first
        self._ph = RowHistory(self._k, _F, _REAL)  # their powers
        # the per-period FFTs' and kernel calls' outputs (valid until the next period; no
        # allocation in the hot path)
        self._x_spectra = np.empty((3, _F), dtype=_CPLX)
        self._echo_frames = np.empty((2, _M), dtype=_REAL)
        self._spectra = np.empty((3, _F), dtype=_CPLX)
        self._times = np.empty((3, _M), dtype=_REAL)
        self._p0 = np.empty(_F, dtype=_REAL)
        self._gain_buf = np.empty(_F, dtype=_REAL)  # the suppressor's gains (kept as _last_gain)
        self._leak = LeakEstimate(self._kernel, _F, _REAL)
        self._distortion = DistortionResidual(self._kernel, _F, _REAL)
        self._presence = EchoPresence()  # does the mic hear the loudspeaker at all?
        self._changed = ChangedPath(self._kernel) if reopen_on_coherence else None
        self.reset()

    # -- state ------------------------------------------------------------------------
    def reset(self) -> None:
        k = self._k
        self._ref.clear()
        self._xh.clear()
        self._ph.clear()
        self._bulk = 0
        self._drift_offset = 0.0  # samples the reference is read later than `bulk`
        self._drift_rate = 0.0  # samples per block
        self._drift_blocks = 0  # active blocks since the last drift measurement
        self._drift_elapsed = 0  # periods since the last filter snapshot
        self._w_snapshot: _Complex | None = None
        # Row 0: the filter's input frame (previous and current period). Rows 1-2: the
        # gradient-constrained taps of one partition of each filter, waiting to be
        # transformed back with the next period's input frame (one FFT for all three).
        self._x_in = np.zeros((3, _M), dtype=_REAL)
        self._xbuf = self._x_in[0]
        self._constrained: tuple[int, int] | None = None  # (main, shadow) partitions waiting
        self._W: _Complex = np.zeros((k, _F), dtype=_CPLX)
        self._P = np.full((k, _F), self._p_initial, dtype=_REAL)
        self._Ws: _Complex = np.zeros((self._ks, _F), dtype=_CPLX)
        self._WX: _Complex = np.zeros((2, _F), dtype=_CPLX)
        # Row 0: the main filter's error, zero-padded; row 1: the suppressor's windowed
        # frame; row 2: the shadow filter's error. One forward FFT for all three.
        self._fft_in = np.zeros((3, _M), dtype=_REAL)
        # Rows 0-1: the partitions of each filter being constrained; row 2: the
        # suppressor's output spectrum. One inverse FFT for all three.
        self._ifft_in: _Complex = np.zeros((3, _F), dtype=_CPLX)
        self._shadow_constrain_at = 0
        self._noise_at = 0
        # row 0: the Kalman filter's smoothed error power m; row 1: the suppressor's pe_s
        self._smooth = np.zeros((2, _F), dtype=_REAL)
        self._smooth[1] = 1e-9
        self._power_sum = 1e-6 * _F  # the reference power, smoothed over periods, summed over bins
        self._row_sums = [0.0] * k  # each history row's total power; the newest at _row_at
        self._row_at = 0
        self._delta = 1e-4 * _M
        self._constrain_at = 0
        self._residual_lin = np.zeros(_F, dtype=_REAL)
        self._main_err = 1e-9
        self._shadow_err = 1e-9
        self._mic_err = 1e-9
        self._shadow_wins = 0
        self._frame = np.zeros(_M, dtype=_REAL)  # the suppressor's analysis frame (unwindowed)
        self._ola = np.zeros(_N, dtype=_REAL)  # scaled to int16 (x 2**15)
        self._rs_err = np.zeros((2, _F), dtype=_REAL)
        self._leak.reset()
        self._distortion.reset()
        self._presence.reset()
        self._overs = (self._over, self._over_talk)
        if self._changed is not None:
            self._changed.reset()
        self._explained = False  # the last block's error was the reference's (a changed path)
        self._r_s = self._rs_err[0]
        self._periods = 0
        self._mic_pow = 1e-12
        self._out_pow = 1e-12
        self._erle_seen = False
        self._talking = False
        self._last_gain = np.zeros(_F, dtype=_REAL)
        self._far_active = False
        self._delay_est.reset()
        # Periods of all-zero reference in a row; past _quiet_after the ring and the
        # filter history are all zeros (see _process_quiet).
        self._silent_periods = 0
        self._settled = False  # the suppressor does nothing: pass the mic through (quiet path)
        self._quiet_after = len(self._ref) // _N + k + 2

    # -- reading the aligned reference -------------------------------------------------
    def _aligned(self, blocks_back: int, length: int) -> _Floats:
        """``length`` samples of the reference as the filter sees it, ending
        ``blocks_back`` blocks before now: delayed by bulk + drift offset."""
        ring = self._ref.view
        delay = self._bulk + self._drift_offset + blocks_back * _N
        whole = math.floor(delay)
        frac = delay - whole
        end = len(ring) - max(0, whole) + TAPS // 2 - 1
        start = end - length - TAPS + 1
        if start < 0:
            return np.zeros(length)
        if frac < 1e-3:
            return ring[end - TAPS // 2 + 1 - length:end - TAPS // 2 + 1].copy()
        seg = ring[start:min(end, len(ring))]
        if len(seg) < length + TAPS - 1:  # the newest samples are not there yet
            seg = np.concatenate((seg, np.zeros(length + TAPS - 1 - len(seg))))
        out: _Floats = np.correlate(seg, TAP_TABLE_REV[round(frac * TAP_STEPS)], mode="valid")
        return out

    # -- the block ----------------------------------------------------------------------
    def process(self, mic: Pcm, reference: Pcm) -> Pcm:
        check_period(mic, reference)
        # all-zero test by bytes: ~20x cheaper than reference.any() on 160 samples
        silent = reference.tobytes() == self._silence
        self._silent_periods = self._silent_periods + 1 if silent else 0
        # converted to float in the delay estimator's buffer (valid for this period)
        d, xr = self._delay_est.push_pcm(mic, reference, _SCALE)
        if self._track_drift:
            self._advance_clock()
        if self._silent_periods > self._quiet_after:
            return self._process_quiet(d)
        self._settled = False
        self._periods += 1
        self._ref.push(xr)
        self._follow_delay()
        xbuf = self._xbuf
        xbuf[:_N] = xbuf[_N:]
        xbuf[_N:] = self._aligned(0, _N)

        if self._constrained is None:
            X = self._xh.push(self._rfft(xbuf, self._x_spectra[0]))
        else:
            spectra = self._rfft(self._x_in, self._x_spectra)
            X = self._xh.push(spectra[0])
            self._store_constrained(spectra[1:])
        kern = self._kernel
        wx = self._WX
        p0 = self._p0
        p0_sum = kern.estimate(self._W, self._Ws, X, wx, p0)  # both echo spectra, |X[0]|^2, its sum
        pxk = self._ph.push(p0)
        # the reference power: its smoothed total sets the regularisation, the total over
        # the filter's reach says whether the far end is active (per-row sums kept in
        # step with the history, so neither needs a pass over the arrays)
        self._power_sum = 0.9 * self._power_sum + 0.1 * p0_sum
        self._delta = 1e-4 * _M + 0.01 * self._power_sum / _F
        at = self._row_at = (self._row_at - 1) % self._k
        self._row_sums[at] = p0_sum
        self._far_active = far = sum(self._row_sums) > self._far_threshold

        # echo estimates of both filters: one inverse FFT; their errors, zero-padded, go
        # into fft_in's rows 0 (main) and 2 (shadow)
        fft_in = self._fft_in
        e_energy, es_energy, d_all = kern.errors(d, self._irfft(wx, self._echo_frames), fft_in)
        take = 0
        d_energy = 0.0
        if far:
            d_energy = d_all
            take = self._choose(d_energy, e_energy, es_energy)
        else:
            self._residual_lin *= 0.5
            self._presence.quiet(d_all)
        # the shadow explains the echo better right now (moved path)
        use_shadow = es_energy < 0.5 * e_energy and self._shadow_wins > 0

        kern.frame(self._frame, fft_in, self._window, 2 if use_shadow else 0)
        if not far:
            return self._finish_alone(self._rfft(fft_in[1], self._spectra[1]))
        # one forward FFT: the main error, the suppressor's frame, the shadow error
        spectra = self._rfft(fft_in, self._spectra)
        out_pcm = self._update(kern, X, pxk, spectra, d_energy)
        self._apply_choice(take)
        if self._track_drift:
            self._follow_drift()
        return out_pcm

    def _update(self, kern: ModuleType | NumpyKernel, X: _Complex, pxk: _Floats,
                spectra: _Complex, d_energy: float) -> Pcm:
        """The far-end-active block from the forward FFT on, in two kernel calls around
        the inverse FFT: the error powers, the Kalman and shadow updates and the
        suppressor's gains (``update``), then the overlap-add (``output``). The gradient
        constraint of one partition of each filter rides on the same inverse FFT."""
        self._noise_at = (self._noise_at + 1) % 4
        j = self._constrain_at
        js = self._shadow_constrain_at
        if self._changed is not None:
            # a changed echo path (error the reference explains), not a person: the
            # Kalman filter's uncertainty re-opened where it is (coherence.ChangedPath)
            self._explained = self._changed.follow(
                spectra[0], X, pxk, error_share=self._main_err / (self._mic_err + 1e-30),
                P=self._P, residual_lin=self._residual_lin, p_initial=self._p_initial)
        if self._reopen_on_leak:
            # error the reference explains is echo, not a person: the estimate keeps learning
            self._leak.reopen(spectra[0], self._WX[0], self._talking and not self._explained,
                              P=self._P, residual_lin=self._residual_lin, p_initial=self._p_initial)
        # the loudspeaker's distortion, which the linear filter cannot take, to the suppressor
        distortion = (self._distortion.update(spectra[0], self._WX[0], self._talking)
                      if self._model_distortion else None)
        self._talking = kern.update(
            spectra, self._smooth, X, pxk, self._W, self._P, self._Ws, self._residual_lin,
            self._rs_err, self._gain_buf, self._ifft_in, self._m_scale, self._delta, self._a2,
            self._noise_at == 0, j, js, *self._overs, self._talk_ratio, self._floor, distortion)
        self._last_gain = self._gain_buf
        times = self._irfft(self._ifft_in, self._times)
        pcm: Pcm = np.empty(_N, dtype=np.int16)
        out_energy = kern.output(times, self._window_pcm, self._ola, pcm, self._x_in)
        self._constrained = (j, js)
        self._constrain_at = (j + 1) % self._k
        self._shadow_constrain_at = (js + 1) % self._ks
        self._track_erle(d_energy, out_energy)
        return pcm

    def _track_erle(self, d_energy: float, out_energy: float) -> None:
        """Echo removed, measured only while the far end talks alone (by the suppressor's
        judgement), so a person talking over the device does not read as a failing one."""
        if self._far_active and not self._talking:
            self._mic_pow = 0.97 * self._mic_pow + 0.03 * d_energy
            self._out_pow = 0.97 * self._out_pow + 0.03 * out_energy
            self._erle_seen = True
            # echo is the reference's, a person is not. With no echo at all the suppressor is
            # off (the residual the unlearnt filter expects is the room and the person) and the
            # filter empty (taps learnt from a person put the device's voice into the output)
            self._presence.far_alone(d_energy, self._changed.coherence.total if self._changed else 1.0)
        absent = self._presence.absent
        self._overs = (0.0, 0.0) if absent else (self._over, self._over_talk)
        if absent:
            self._W.fill(0)
            self._Ws.fill(0)

    def _process_quiet(self, d: _Floats) -> Pcm:
        """The far end has been silent for longer than the delay line and the filter
        reach: the reference ring and the filter's input history hold only zeros, so the
        echo estimate is exactly zero. This is :meth:`process` with everything that
        would multiply those zeros left out (the listening device's common case); the
        output is bit for bit the same."""
        self._flush_constrained()
        self._periods += 1
        self._power_sum *= 0.9
        self._far_active = False
        self._presence.quiet(float(d @ d))
        frame = self._frame
        frame[:_N] = frame[_N:]
        frame[_N:] = d
        if self._settled:
            return self._pass_through(frame)
        self._residual_lin *= 0.5
        np.multiply(frame, self._window, out=self._fft_in[1])
        out = self._finish_alone(self._rfft(self._fft_in[1], self._spectra[1]))
        # Once the residual-echo estimate is below 1e-30 the gains (1 - 6 r_s / (error +
        # 1e-12)) round to exactly 1 in float32: only the overlap-add is left, no FFT.
        # (Exactly zero it never gets: r_s * 0.6 rounds back up to the smallest subnormal.)
        self._settled = (self.idle_pass_through and float(self._rs_err[0].max()) < _SETTLED
                         and float(self._residual_lin.max()) < _SETTLED)
        return out

    def _pass_through(self, frame: _Floats) -> Pcm:
        """The suppressor with all gains at 1 (the far end long silent, no residual echo
        left): the overlap-add of the windowed frames without the FFT round trip. The
        output matches the full path's to the FFT's rounding (at most 1 LSB, rarely)."""
        windowed = frame * self._window_both
        out = self._ola + windowed[:_N]
        self._ola[:] = windowed[_N:]
        return to_pcm(out)

    # -- delay and drift ---------------------------------------------------------------
    def _follow_delay(self) -> None:
        est = self._delay_est.delay_samples
        if est is None:
            return
        lag = est - self._bulk - self._drift_offset  # where the direct path sits in the filter
        if self._margin - _N // 2 <= lag <= self._late_reach and self._bulk > 0:
            return
        target = int(min(self._max_delay, max(0, (est - self._drift_offset - self._margin) // _N * _N)))
        if target == self._bulk:
            return
        shift = (target - self._bulk) // _N
        self._bulk = target
        self._flush_constrained()
        # The reference is now read `shift` blocks earlier: the echo lands `shift`
        # partitions sooner in the filter, so move the taps (and their uncertainty).
        for arr, fill in ((self._W, 0.0), (self._Ws, 0.0), (self._P, self._p_initial)):
            if shift > 0:
                arr[:-shift] = arr[shift:].copy() if shift < len(arr) else fill
                arr[max(0, len(arr) - shift):] = fill
            else:
                s = -shift
                arr[s:] = arr[:-s].copy() if s < len(arr) else fill
                arr[: min(s, len(arr))] = fill
        self._rebuild_history()
        self._w_snapshot = None

    def _rebuild_history(self) -> None:
        frames = np.stack([self._aligned(k, _M) for k in range(self._k)])
        X = self._xh.assign(rfft(frames))
        pxk = self._ph.assign(X.real ** 2 + X.imag ** 2)
        self._row_sums = [float(v) for v in pxk.sum(axis=1)]
        self._row_at = 0
        self._xbuf[_N:] = self._aligned(0, _N)

    def _advance_clock(self) -> None:
        """The two clocks part at the drift rate in every period, the far end talking or
        not (advanced only in active blocks, each pause left the echo where the reference
        was no longer read: at 100 ppm, 1.6 samples per second of pause). Whole blocks of
        offset go into the bulk delay (the same read), so hours do not pile up an offset."""
        offset = self._drift_offset + self._drift_rate
        if offset >= _N and self._bulk + _N <= self._max_delay:
            self._bulk += _N
            offset -= _N
        elif offset <= -_N and self._bulk >= _N:
            self._bulk -= _N
            offset += _N
        if offset < -self._bulk:
            # The reference cannot be read before it was written: with the echo under the
            # margin and arriving ever earlier, the filters' taps move instead (drift.py).
            self._flush_constrained()
            snapshot = [] if self._w_snapshot is None else [self._w_snapshot]
            shift_earlier([self._W, self._Ws, *snapshot], -(offset + self._bulk), _M)
            offset = -float(self._bulk)
        self._drift_offset = offset
        self._drift_elapsed += 1

    def _follow_drift(self) -> None:
        self._drift_blocks += 1
        if self._drift_blocks < _DRIFT_EVERY:
            return
        self._drift_blocks = 0
        self._flush_constrained()
        snapshot = self._W.copy()
        old, self._w_snapshot = self._w_snapshot, snapshot
        elapsed, self._drift_elapsed = self._drift_elapsed, 0
        linear_erle = self._mic_err / (self._main_err + 1e-12)
        if old is None or linear_erle < 4.0:
            return
        moved = measured_shift(snapshot, old, _M)
        if abs(moved) > 1.5:  # a jump, not a drift (path change, double talk)
            return
        rate = self._drift_rate + 0.5 * moved / max(_DRIFT_EVERY, elapsed)
        self._drift_rate = max(-_MAX_DRIFT, min(_MAX_DRIFT, rate))

    # -- the filters' constraint and copies -------------------------------------------
    def _store_constrained(self, spectra: _Complex) -> None:
        """The constrained partitions' spectra (from :meth:`_update`'s taps) go back
        into the filters."""
        if self._constrained is not None:
            j, js = self._constrained
            self._W[j] = spectra[0]
            self._Ws[js] = spectra[1]
            self._constrained = None

    def _flush_constrained(self) -> None:
        """Finish the gradient constraint now, before anything reads or moves the
        filters outside the usual order (a delay jump, a filter copy, a snapshot)."""
        if self._constrained is not None:
            self._store_constrained(self._rfft(self._x_in[1:], self._x_spectra[1:]))

    def _choose(self, d_energy: float, e_energy: float, es_energy: float) -> int:
        """Track the filters' error levels; returns which filter to copy into the other
        (``_COPY_SHADOW``, ``_COPY_MAIN`` or 0), done by :meth:`_apply_choice` after the
        update."""
        self._mic_err = 0.9 * self._mic_err + 0.1 * d_energy
        self._main_err = 0.9 * self._main_err + 0.1 * e_energy
        self._shadow_err = 0.9 * self._shadow_err + 0.1 * es_energy
        if self._shadow_err < 0.5 * self._main_err:
            self._shadow_wins += 1
            if self._shadow_wins >= 10:
                self._main_err = self._shadow_err
                self._shadow_wins = 0
                self._w_snapshot = None
                return _COPY_SHADOW
        else:
            self._shadow_wins = 0
            if self._main_err < 0.5 * self._shadow_err:
                self._shadow_err = self._main_err
                return _COPY_MAIN
        return 0

    def _apply_choice(self, take: int) -> None:
        if take:
            self._flush_constrained()
        if take == _COPY_SHADOW:
            self._W[: self._ks] = self._Ws
            self._W[self._ks:] *= 0.5
            np.maximum(self._P, 0.1 * self._p_initial, out=self._P)
        elif take == _COPY_MAIN:
            self._Ws[:] = self._W[: self._ks]

    # -- residual echo suppression, output ----------------------------------------------
    def _finish_alone(self, spectrum: _Complex) -> Pcm:
        """The suppressor and the overlap-add for a period without filter update (the far
        end inactive): the error ``spectrum`` (the windowed frame's) through its gains."""
        kern = self._kernel
        out_spec = self._ifft_in[2]
        self._talking = kern.suppress(spectrum, self._smooth, self._residual_lin, self._rs_err,
                                      self._gain_buf, out_spec, *self._overs,
                                      self._talk_ratio, self._floor)
        self._last_gain = self._gain_buf
        pcm: Pcm = np.empty(_N, dtype=np.int16)
        out_energy = kern.output(self._irfft(out_spec, self._times[2]), self._window_pcm,
                                 self._ola, pcm, None)
        self._track_erle(0.0, out_energy)
        return pcm

    @property
    def linear(self) -> Pcm:
        """The error before residual-echo suppression, aligned with :meth:`process`'s
        output: the previous period's half of the suppressor's analysis frame. In double
        talk it keeps the onset of a word the suppressor takes (the recognizer's input)."""
        return to_pcm(self._frame[:_N] * 32768.0)

    # -- stats ----------------------------------------------------------------------------
    @property
    def compiled(self) -> bool:
        """True when the compiled kernel runs the block, False for the numpy path."""
        return not isinstance(self._kernel, NumpyKernel)

    @property
    def drift_ppm(self) -> float:
        """The clock drift being compensated (positive: the echo arrives ever later)."""
        return 1e6 * self._drift_rate / _N

    @property
    def stats(self) -> AecStats:
        est = self._delay_est.delay_samples
        delay = None if est is None else 1000.0 * est / SAMPLE_RATE
        erle = 10.0 * float(np.log10(self._mic_pow / (self._out_pow + 1e-12))) if self._erle_seen else None
        converged = est is not None and erle is not None and erle > 10.0
        # the echo left in the output: the residual estimate through the last gains (none
        # where the mic hears no loudspeaker: the estimate is then the unlearnt filter's),
        # and the error the reference explains, which that estimate misses until the filter
        # re-converges after the echo path changed (the leak the device would barge in on)
        absent = self._presence.absent
        residual = 0.0 if absent else float((self._last_gain**2 * self._r_s).sum()) / (_M * _N)
        if not absent and self._far_active and self._changed is not None:
            residual += self._changed.left_in_output(self._last_gain) / (_M * _N)
        residual_db = 10.0 * float(np.log10(residual + 1e-12))
        # nor echo removed: with no echo it would be a reading of the room's noise
        return AecStats(self.name, delay_ms=delay, erle_db=None if absent else erle, converged=converged,
                        reference_ok=converged, residual_echo_dbfs=max(-120.0, residual_db),
                        far_end_active=self._far_active, periods=self._periods, echo_absent=absent)

