"""edgevoice's own echo canceller (the default engine).

Pure numpy, vectorised per 10 ms block, frame-synchronous input, 10 ms added latency
(the residual-echo suppressor's overlap-add). Built from:

1. **Bulk delay** (:mod:`.delay`): GCC-PHAT on 4 kHz signals with a time-averaged
   cross-spectrum. The reference is delayed by the estimate (minus a small margin) in
   whole 10 ms steps; when the estimate moves by a step (clock drift, new device) the
   filter's partitions are shifted with it, so nothing is re-learned.
2. **Linear echo path**: a partitioned-block frequency-domain adaptive filter (MDF,
   160-sample partitions, 320-point FFTs, one partition gradient-constrained per block).
   Its per-bin step size is the "optimal" one — the estimated residual echo over the
   error power (Valin 2007) — so it freezes by itself when someone talks (the error
   grows, the residual echo does not) and needs no double-talk detector.
3. **Shadow filter**: a short fixed-step NLMS filter over the first partitions. It
   re-learns a moved echo path in a second; whichever of the two filters leaves less
   error is used, and a clearly better shadow is copied into the main filter.
4. **Residual echo suppressor**: a Wiener gain per bin from the residual-echo estimate
   (per band: how the error power follows the echo estimate's power, which near-end
   speech cannot fake because it is uncorrelated with the far end) against the error
   power, with an overestimate and a floor; sqrt-Hann overlap-add.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from edgevoice.audio.aec.base import PERIOD_SAMPLES, AecStats, EchoCanceller, check_period
from edgevoice.audio.aec.delay import DelayEstimator
from edgevoice.audio.frames import SAMPLE_RATE, Pcm, to_float, to_int16

_N = PERIOD_SAMPLES
_M = 2 * _N
_F = _N + 1
_BANDS = np.array([0, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, _F])
_Complex = npt.NDArray[np.complex128]
_Floats = npt.NDArray[np.float64]


def _band_index() -> npt.NDArray[np.intp]:
    idx = np.zeros(_F, dtype=np.intp)
    for b in range(len(_BANDS) - 1):
        idx[_BANDS[b]:_BANDS[b + 1]] = b
    return idx


_BAND_OF_BIN = _band_index()
_NBANDS = len(_BANDS) - 1


def _band_sum(spec: _Floats) -> _Floats:
    out: _Floats = np.add.reduceat(spec, _BANDS[:-1])
    return out


class EdgevoiceCanceller(EchoCanceller):
    """Delay estimator + MDF with optimal step + shadow NLMS + residual echo suppressor."""

    name = "edgevoice"
    latency_ms = 1000.0 * _N / SAMPLE_RATE

    def __init__(self, *, filter_ms: int = 200, max_delay_ms: int = 500, shadow_ms: int = 80,
                 suppression_db: float = -40.0, overestimate: float = 6.0,
                 delay_margin_ms: int = 15) -> None:
        self._k = max(2, round(filter_ms * SAMPLE_RATE / 1000 / _N))
        self._ks = max(1, min(self._k, round(shadow_ms * SAMPLE_RATE / 1000 / _N)))
        self._max_delay = SAMPLE_RATE * max_delay_ms // 1000
        self._margin = SAMPLE_RATE * delay_margin_ms // 1000
        self._floor = float(10.0 ** (suppression_db / 20.0))
        self._over = overestimate
        self._window = np.sqrt(np.hanning(_M + 1)[:_M])
        self._delay_est = DelayEstimator(max_delay_ms=float(max_delay_ms))
        self.reset()

    # -- state ------------------------------------------------------------------------
    def reset(self) -> None:
        k = self._k
        self._ring = np.zeros(self._max_delay + 2 * _N, dtype=np.float64)
        self._bulk = 0
        self._x_prev = np.zeros(_N)
        self._X: _Complex = np.zeros((k, _F), dtype=np.complex128)
        self._W: _Complex = np.zeros((k, _F), dtype=np.complex128)
        self._Ws: _Complex = np.zeros((self._ks, _F), dtype=np.complex128)
        self._power = np.full(_F, 1e-6)
        self._delta = 1e-4 * _M
        self._constrain_at = 0
        # leak (residual echo / echo estimate) per band, speex-style regression of variations
        self._e_avg = np.zeros(_F)
        self._y_avg = np.zeros(_F)
        self._pey = np.zeros(_NBANDS)
        self._pyy = np.full(_NBANDS, 1e-9)
        self._leak = np.full(_NBANDS, 0.25)
        self._adapted = 0.0
        self._main_err = 1e-9
        self._shadow_err = 1e-9
        self._shadow_wins = 0
        # suppressor
        self._e_prev = np.zeros(_N)
        self._y_prev = np.zeros(_N)
        self._ola = np.zeros(_N)
        self._pe_s = np.full(_F, 1e-9)
        self._r_s = np.zeros(_F)
        # stats
        self._periods = 0
        self._mic_pow = 1e-12
        self._out_pow = 1e-12
        self._erle: float | None = None
        self._residual = 1e-12
        self._far_active = False
        self._delay_est.reset()

    # -- the block ----------------------------------------------------------------------
    def process(self, mic: Pcm, reference: Pcm) -> Pcm:
        check_period(mic, reference)
        d = to_float(mic).astype(np.float64)
        xr = to_float(reference).astype(np.float64)
        self._periods += 1
        self._delay_est.push(d.astype(np.float32), xr.astype(np.float32))
        self._ring[:-_N] = self._ring[_N:]
        self._ring[-_N:] = xr
        self._follow_delay()
        end = len(self._ring) - self._bulk
        x = self._ring[end - _N:end].copy()

        # far-end spectrum, partition history
        X = self._X
        X[1:] = X[:-1]
        X[0] = np.fft.rfft(np.concatenate((self._x_prev, x)))
        self._x_prev = x
        px = (X[0].real ** 2 + X[0].imag ** 2)
        self._power = 0.9 * self._power + 0.1 * px
        self._delta = 1e-4 * _M + 0.01 * float(self._power.mean())
        x_energy = float(x @ x)
        self._far_active = x_energy > _N * 1e-7

        # main and shadow filter outputs
        y = np.fft.irfft(np.einsum("kf,kf->f", self._W, X))[_N:]
        ys = np.fft.irfft(np.einsum("kf,kf->f", self._Ws, X[: self._ks]))[_N:]
        e = d - y
        es = d - ys
        e_energy = float(e @ e)
        es_energy = float(es @ es)
        E = np.fft.rfft(np.concatenate((np.zeros(_N), e)))
        Es = np.fft.rfft(np.concatenate((np.zeros(_N), es)))
        Y = np.fft.rfft(np.concatenate((np.zeros(_N), y)))
        pe = E.real ** 2 + E.imag ** 2
        py = Y.real ** 2 + Y.imag ** 2

        if self._far_active:
            self._update_leak(pe, py)
            self._adapt(X, E=E, Es=Es, pe=pe, py=py, e_energy=e_energy, x_energy=x_energy)
            self._choose(e_energy, es_energy)
        if es_energy < 0.5 * e_energy and self._shadow_wins > 0:
            e, y = es, ys  # the shadow explains the echo better right now (moved path)
            pe = Es.real ** 2 + Es.imag ** 2

        out = self._suppress(e, y)
        self._track_stats(d, out)
        return to_int16(out)

    def _follow_delay(self) -> None:
        est = self._delay_est.delay_samples
        if est is None:
            return
        target = max(0, (est - self._margin) // _N * _N)
        target = min(target, self._max_delay)
        if target == self._bulk:
            return
        # hysteresis: ignore a one-step wobble around a boundary
        if abs(target - self._bulk) == _N and 0 <= est - self._bulk - self._margin < 2 * _N:
            return
        shift = (target - self._bulk) // _N
        self._bulk = target
        # The reference is now read `shift` blocks earlier: the echo lands `shift`
        # partitions sooner in the filter, so move the taps forward (or back).
        for w in (self._W, self._Ws):
            if shift > 0:
                w[:-shift] = w[shift:].copy() if shift < len(w) else 0
                w[max(0, len(w) - shift):] = 0
            else:
                s = -shift
                w[s:] = w[:-s].copy() if s < len(w) else 0
                w[: min(s, len(w))] = 0
        self._rebuild_history()

    def _rebuild_history(self) -> None:
        end = len(self._ring) - self._bulk
        starts = end - _M - _N * np.arange(self._k)
        starts = np.maximum(starts, 0)
        segments = self._ring[starts[:, None] + np.arange(_M)[None, :]]
        self._X[:] = np.fft.rfft(segments, axis=1)
        self._x_prev = self._ring[end - _N:end].copy()

    def _update_leak(self, pe: _Floats, py: _Floats) -> None:
        eh = pe - self._e_avg
        yh = py - self._y_avg
        self._e_avg += 0.05 * eh
        self._y_avg += 0.05 * yh
        pey = _band_sum(eh * yh)
        pyy = _band_sum(yh * yh) + 1e-18
        see = float(pe.sum()) + 1e-12
        syy = float(py.sum())
        alpha = min(0.02 * syy / see, 0.005) if self._adapted >= 1.0 else 0.02
        self._pey = (1 - alpha) * self._pey + alpha * pey
        self._pyy = (1 - alpha) * self._pyy + alpha * pyy
        self._leak = np.clip(self._pey / self._pyy, 1e-4, 1.0)

    def _adapt(self, X: _Complex, *, E: _Complex, Es: _Complex, pe: _Floats, py: _Floats,
               e_energy: float, x_energy: float) -> None:
        # NLMS normaliser per bin: the far-end power across all partitions (what the
        # update multiplies), never a lagging average that would blow up at onsets.
        pxk = X.real ** 2 + X.imag ** 2
        shadow_power = pxk[: self._ks].sum(axis=0) + self._delta
        power = shadow_power + pxk[self._ks:].sum(axis=0)
        if self._adapted < 1.0:
            rate = min(0.25, 0.25 * x_energy / (e_energy + 1e-9))
            step = np.full(_F, rate)
            self._adapted += rate / 4.0
        else:
            leak = self._leak[_BAND_OF_BIN]
            rer = min(0.5, float((3.0 * leak * py).sum() / (pe.sum() + 1e-12)))
            step = np.minimum((0.7 * leak * py + 0.3 * rer * pe) / (pe + 1e-12), 0.5)
        grad = np.conj(X) * (E * (step / power))
        self._W += grad
        j = self._constrain_at
        w = np.fft.irfft(self._W[j])
        w[_N:] = 0.0
        self._W[j] = np.fft.rfft(w)
        self._constrain_at = (j + 1) % self._k
        # shadow: fixed-step NLMS, constrained every block (it is short)
        ks = self._ks
        self._Ws += np.conj(X[:ks]) * (Es * (0.5 / shadow_power))
        ws = np.fft.irfft(self._Ws, axis=1)
        ws[:, _N:] = 0.0
        self._Ws = np.fft.rfft(ws, axis=1)

    def _choose(self, e_energy: float, es_energy: float) -> None:
        self._main_err = 0.9 * self._main_err + 0.1 * e_energy
        self._shadow_err = 0.9 * self._shadow_err + 0.1 * es_energy
        if self._shadow_err < 0.5 * self._main_err:
            self._shadow_wins += 1
            if self._shadow_wins >= 10:
                self._W[: self._ks] = self._Ws
                self._W[self._ks:] *= 0.5
                self._main_err = self._shadow_err
                self._shadow_wins = 0
        else:
            self._shadow_wins = 0
            if self._main_err < 0.5 * self._shadow_err:
                self._Ws[:] = self._W[: self._ks]
                self._shadow_err = self._main_err

    def _suppress(self, e: _Floats, y: _Floats) -> _Floats:
        win = self._window
        Ef = np.fft.rfft(np.concatenate((self._e_prev, e)) * win)
        Yf = np.fft.rfft(np.concatenate((self._y_prev, y)) * win)
        self._e_prev = e
        self._y_prev = y
        pe = Ef.real ** 2 + Ef.imag ** 2
        py = Yf.real ** 2 + Yf.imag ** 2
        r = self._leak[_BAND_OF_BIN] * py
        # residual echo decays like the room: keep a slowly released peak
        self._r_s = np.maximum(r, 0.6 * self._r_s)
        self._pe_s = 0.5 * self._pe_s + 0.5 * pe
        gain = np.maximum(self._floor, 1.0 - self._over * self._r_s / (np.maximum(pe, self._pe_s) + 1e-12))
        self._residual = float((gain * gain * self._r_s).sum()) / (_M * _N)
        frame = np.fft.irfft(Ef * gain) * win
        out = self._ola + frame[:_N]
        self._ola = frame[_N:].copy()
        return out

    def _track_stats(self, d: _Floats, out: _Floats) -> None:
        if not self._far_active:
            return
        self._mic_pow = 0.97 * self._mic_pow + 0.03 * float(d @ d)
        self._out_pow = 0.97 * self._out_pow + 0.03 * float(out @ out)
        self._erle = 10.0 * float(np.log10(self._mic_pow / (self._out_pow + 1e-12)))

    @property
    def stats(self) -> AecStats:
        est = self._delay_est.delay_samples
        delay = None if est is None else 1000.0 * est / SAMPLE_RATE
        converged = est is not None and self._erle is not None and self._erle > 10.0
        residual_db = 10.0 * float(np.log10(self._residual + 1e-12))
        return AecStats(self.name, delay_ms=delay, erle_db=self._erle, converged=converged,
                        reference_ok=converged, residual_echo_dbfs=max(-120.0, residual_db),
                        far_end_active=self._far_active, periods=self._periods)
