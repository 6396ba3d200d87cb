"""The echo canceller's compiled kernel, call for call in numpy: the reference path.

:mod:`.engine` runs the per-block arithmetic through one set of calls — ``estimate``,
``errors``, ``frame``, ``update``, ``suppress``, ``output``, ``coherence``, ``distortion``,
``leak``, ``rfft``, ``irfft``, with the arguments and contracts of ``_kernel.pyi`` —
served by the compiled ``_kernel`` (chosen in :mod:`.kernel`) or, when it was not built or
``compiled=False``, by :class:`NumpyKernel` here. So the engine's block is written once,
without a branch per step, and the C code has its reference beside it, function for
function: the maths the C is checked against (they agree to float32 rounding; the sums run
in another order).

At 161 bins numpy's per-call overhead, not the arithmetic, is what a block costs, so the
calls work in place on the engine's arrays and on scratch arrays of their own, allocated
once, in float32/complex64 like the engine's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from edgevoice.audio.aec.base import PERIOD_SAMPLES
from edgevoice.audio.aec.fft import irfft, rfft
from edgevoice.audio.frames import Pcm

_N = PERIOD_SAMPLES
_M = 2 * _N
_F = _N + 1
_Complex = npt.NDArray[np.complexfloating[Any, Any]]
_Floats = npt.NDArray[np.floating[Any]]
# The filters and the suppressor run in single precision: half the memory traffic of the
# (partitions x bins) arrays, and far more than the 16-bit output needs.
_REAL = np.float32
_CPLX = np.complex64
_PCM_SCALE_SQ = 2.0 ** -30  # energy of int16-scaled samples -> of float samples
# ndarray.sum without its Python-level wrapper (the same pairwise sum, bit for bit)
_sum = np.add.reduce


class NumpyKernel:
    """The kernel's calls for a main filter of ``partitions`` partitions (the size its
    scratch arrays are made for; the shadow filter has at most as many)."""

    # the 320-point FFTs into preallocated arrays: numpy's pocketfft (the C kernel has its own)
    rfft = staticmethod(rfft)
    irfft = staticmethod(irfft)

    def __init__(self, partitions: int) -> None:
        k = partitions
        # sums over partitions as matrix-vector products (numpy's axis-0 sums are slower)
        self._ones_r = np.ones(k, dtype=_REAL)
        self._ones_c = np.ones(k, dtype=_CPLX)
        # scratch arrays, reused every period (no allocation in the hot path)
        self._tmp_c = np.empty((k, _F), dtype=_CPLX)
        self._conj_x = np.empty((k, _F), dtype=_CPLX)
        self._tmp_r = np.empty((k, _F), dtype=_REAL)
        self._tmp_pairs = np.empty((k, 2 * _F), dtype=_REAL)
        self._powers = np.empty((3, _F), dtype=_REAL)
        self._step = np.empty(_F, dtype=_CPLX)
        self._out = np.empty(_N, dtype=_REAL)
        # the Kalman step as complex with imaginary part 0 (zeroed once, only .real written)
        self._mu_c = np.zeros((k, _F), dtype=_CPLX)
        self._tmp_f = np.empty(_F, dtype=_REAL)
        self._expected = np.empty(_F, dtype=_REAL)
        # the coherence's scratch, made on its first call (its lags and bands are its own)
        self._coh: dict[str, Any] = {}

    def estimate(self, W: _Complex, Ws: _Complex, X: _Complex, wx: _Complex, p0: _Floats) -> float:
        """Both filters' echo spectra into ``wx`` (main, shadow) and the newest reference
        spectrum's power into ``p0``; returns that power's sum over bins."""
        np.abs(X[0], out=p0)
        p0 *= p0
        tmp = self._tmp_c
        np.multiply(W, X, out=tmp)
        np.matmul(self._ones_c, tmp, out=wx[0])
        ks = len(Ws)
        np.multiply(Ws, X[:ks], out=tmp[:ks])
        np.matmul(self._ones_c[:ks], tmp[:ks], out=wx[1])
        return float(_sum(p0))

    def errors(self, d: _Floats, echo: _Floats, fft_in: _Floats) -> tuple[float, float, float]:
        """The errors ``d`` - echo (the echo frames' second halves) into the second halves
        of ``fft_in``'s rows 0 (main) and 2 (shadow); returns their energies and the mic's."""
        err = fft_in[::2, _N:]
        np.subtract(d, echo[:, _N:], out=err)
        return float(err[0] @ err[0]), float(err[1] @ err[1]), float(d @ d)

    def frame(self, frame: _Floats, fft_in: _Floats, window: _Floats, row: int) -> None:
        """The suppressor's analysis frame slides by one period and takes ``fft_in``'s
        error row ``row`` (0: main, 2: shadow); ``fft_in[1]`` = frame x window."""
        frame[:_N] = frame[_N:]
        frame[_N:] = fft_in[row, _N:]
        np.multiply(frame, window, out=fft_in[1])

    def update(  # noqa: PLR0917 - the C kernel's signature (_kernel.pyi), positional there
            self, spectra: _Complex, smooth: _Floats, X: _Complex, pxk: _Floats, W: _Complex,
            P: _Floats, Ws: _Complex, residual_lin: _Floats, rs_err: _Floats, gain: _Floats,
            ifft_in: _Complex, m_scale: float, delta: float, a2: float, noise: bool, j: int,
            js: int, over: float, over_talk: float, talk_ratio: float, floor: float,
            residual_nl: _Floats | None = None) -> bool:
        """One far-end-active block between the forward FFT (``spectra``: the main error,
        the suppressor's frame, the shadow error) and the inverse one: the error powers
        smoothed, the Kalman and shadow updates, the suppressor's gain, and ``ifft_in`` =
        W[j], Ws[js] (the partitions to constrain), frame x gain. ``residual_nl``: echo
        the linear filter cannot model (:mod:`.distortion`), added to its expected
        misadjustment in the suppressor's estimate. Returns True while someone talks (the
        suppressor's judgement)."""
        powers = np.abs(spectra, out=self._powers)
        powers *= powers
        smooth += powers[:2]  # row 0: the Kalman filter's m; row 1: the suppressor's pe_s
        smooth *= 0.5
        self._adapt(X, pxk, spectra[0], spectra[2], W=W, P=P, Ws=Ws, m=smooth[0],
                    residual_lin=residual_lin, m_scale=m_scale, delta=delta, a2=a2, noise=noise)
        residual = residual_lin if residual_nl is None else residual_lin + residual_nl
        talking = _gain(powers[1], smooth[1], residual_lin=residual, rs_err=rs_err, gain=gain,
                        over=over, over_talk=over_talk, talk_ratio=talk_ratio, floor=floor)
        ifft_in[0] = W[j]
        ifft_in[1] = Ws[js]
        np.multiply(spectra[1], gain, out=ifft_in[2])
        return talking

    def suppress(  # noqa: PLR0917 - the C kernel's signature (_kernel.pyi), positional there
            self, spectrum: _Complex, smooth: _Floats, residual_lin: _Floats, rs_err: _Floats,
            gain: _Floats, out: _Complex, over: float, over_talk: float, talk_ratio: float,
            floor: float) -> bool:
        """The suppressor alone (a block without filter update): ``smooth[1]`` (pe_s)
        averaged with |spectrum|^2, the gain as in :meth:`update`, ``out`` = spectrum x
        gain. Returns True while someone talks."""
        pe = np.abs(spectrum)
        pe *= pe
        pe_s = smooth[1]
        pe_s *= 0.5
        pe_s += 0.5 * pe
        talking = _gain(pe, pe_s, residual_lin=residual_lin, rs_err=rs_err, gain=gain, over=over,
                        over_talk=over_talk, talk_ratio=talk_ratio, floor=floor)
        np.multiply(spectrum, gain, out=out)
        return talking

    def coherence(  # noqa: PLR0917 - the C kernel's signature (_kernel.pyi), positional there
            self, E: _Complex, X: _Complex, px: _Floats, s: _Complex, pw: _Floats, bias: _Floats,
            fast: _Floats, share: _Floats, edges: npt.NDArray[np.intp], rate: float,
            fast_rate: float) -> float:
        """The share of the error ``E`` that the reference (``X``, its powers ``px``, newest
        first) explains, per band (``edges``: first bins, then one past the last), into
        ``share``; returns the bands' mean. ``s`` (the conjugated cross-spectra
        <conj(E) X_k>), ``pw`` (the error's power, then each lag's reference power),
        ``bias`` (what |s|^2 reads for unrelated signals) and ``fast`` (the error's power
        per band) are the state, smoothed at ``rate`` (``fast`` at ``fast_rate``)."""
        lags, width = s.shape
        lo, hi = int(edges[0]), int(edges[-1])
        starts = edges[:-1] - lo
        scratch = self._coh
        if scratch.get("shape") != (lags, width):
            scratch.update(shape=(lags, width), conj_e=np.empty(width, dtype=_CPLX),
                           cross=np.empty((lags, width), dtype=_CPLX),
                           pairs=np.empty((lags, 2 * width), dtype=_REAL),
                           tmp=np.empty((lags, width), dtype=_REAL), ones=np.ones(lags, dtype=_REAL))
        keep = 1.0 - rate
        conj_e = np.conjugate(E[lo:hi], out=scratch["conj_e"])
        conj_e *= rate
        s *= keep
        s += np.multiply(X[:lags, lo:hi], conj_e, out=scratch["cross"])
        e = E[lo:hi]
        pe = e.real ** 2 + e.imag ** 2
        pw *= keep
        pw[0] += rate * pe
        pw[1:] += rate * px[:lags, lo:hi]
        bias *= keep * keep
        bias += np.multiply(px[:lags, lo:hi], (rate * rate) * pe, out=scratch["tmp"])
        pairs = s.view(_REAL)
        sq = np.multiply(pairs, pairs, out=scratch["pairs"])
        mag = np.add(sq[:, ::2], sq[:, 1::2], out=scratch["tmp"])  # |<E X_k*>|^2
        mag -= bias
        mag /= pw[1:]
        explained = scratch["ones"] @ mag  # error power the reference explains, per bin
        fast *= 1.0 - fast_rate
        fast += fast_rate * np.add.reduceat(pe, starts)
        band_expl = np.add.reduceat(explained, starts)
        band_err = np.add.reduceat(pw[0], starts)
        np.clip(band_expl / np.maximum(band_err, fast), 0.0, 1.0, out=share)
        return float(share.mean())

    def distortion(  # noqa: PLR0917 - the C kernel's signature (_kernel.pyi), positional there
            self, E: _Complex, Y: _Complex, means: _Floats, fits: _Floats,
            edges: npt.NDArray[np.intp], out: _Floats, spread: int, mean_rate: float, rate: float,
            talking: bool) -> None:
        """The loudspeaker's distortion in the error ``E`` per bin into ``out`` (zeros while
        ``talking``): each band's (``edges``) share of the echo estimate ``Y``'s power
        averaged over ``spread`` bins either side. ``means`` (the two powers' means, at
        ``mean_rate``) and ``fits`` (per band the covariance and variance of their
        fluctuations, at ``rate``, not while ``talking``) are the state."""
        pe = E.real.astype(np.float64) ** 2 + E.imag.astype(np.float64) ** 2
        py = Y.real.astype(np.float64) ** 2 + Y.imag.astype(np.float64) ** 2
        spread_power = np.convolve(py, np.full(2 * spread + 1, 1.0 / (2 * spread + 1)), mode="same")
        e_dev = pe - means[0]
        s_dev = spread_power - means[1]
        means[0] += mean_rate * e_dev
        means[1] += mean_rate * s_dev
        if talking:
            out[:] = 0.0
            return
        norm = math.sqrt(float(s_dev @ s_dev)) + 1e-12  # each block's terms scale-free, as in speex
        starts = edges[:-1]
        fits[0] += rate * (np.add.reduceat(e_dev * s_dev, starts) / norm - fits[0])
        fits[1] += rate * (np.add.reduceat(s_dev * s_dev, starts) / norm - fits[1])
        share = np.clip(fits[0] / (fits[1] + 1e-12), 0.0, 1.0)
        out[:] = np.repeat(share, np.diff(edges)) * spread_power

    def leak(self, E: _Complex, Y: _Complex, means: _Floats, py: _Floats,
             mean_rate: float) -> tuple[float, float, float, float]:
        """The leak estimate's statistics of one block: ``py`` = |Y|^2; the powers'
        fluctuations from ``means`` (the error's, the echo estimate's), which then move
        towards the powers at ``mean_rate``. Returns the sums over bins of |E|^2 and
        |Y|^2, the fluctuations' covariance and the echo estimate's variance."""
        pe = E.real ** 2 + E.imag ** 2
        np.add(Y.real ** 2, Y.imag ** 2, out=py)
        e_dev = pe - means[0]
        y_dev = py - means[1]
        means[0] += mean_rate * e_dev
        means[1] += mean_rate * y_dev
        return float(_sum(pe)), float(_sum(py)), float(e_dev @ y_dev), float(y_dev @ y_dev)

    def output(self, times: _Floats, window_pcm: _Floats, ola: _Floats, pcm: Pcm,
               x_in: _Floats | None) -> float:
        """The inverse FFT's last row (the suppressor's output) through the synthesis
        window (it carries the int16 scale), overlap-added into ``pcm``. With ``x_in``,
        the first halves of rows 0-1 (the constrained taps) go into its rows 1-2, to be
        transformed back with the next period's input frame. Returns the output's energy
        in float samples, before rounding."""
        if x_in is not None:
            x_in[1:, :_N] = times[:2, :_N]  # the second half of x_in's rows stays 0
        frame = times.reshape(-1, _M)[-1]  # a view: times is one row or three
        frame *= window_pcm
        out = np.add(ola, frame[:_N], out=self._out)
        ola[:] = frame[_N:]
        energy = float(out @ out) * _PCM_SCALE_SQ
        pcm[:] = to_pcm(out)
        return energy

    def _adapt(self, X: _Complex, pxk: _Floats, E: _Complex, Es: _Complex, *, W: _Complex,
               P: _Floats, Ws: _Complex, m: _Floats, residual_lin: _Floats, m_scale: float,
               delta: float, a2: float, noise: bool) -> None:
        """Kalman update of the main filter ``W`` and its uncertainty ``P``, NLMS update of
        the shadow ``Ws`` (their gradient constraint rides on the engine's inverse FFT)."""
        # Kalman gain: the filter's uncertainty P against the (smoothed) error power m.
        mu = self._tmp_r
        np.multiply(P, pxk, out=mu)
        expected = np.matmul(self._ones_r, mu, out=self._expected)
        np.multiply(expected, 0.5, out=residual_lin)
        den = self._tmp_f
        np.multiply(m, m_scale, out=den)  # 2 m / k
        den += expected
        den += delta
        np.divide(P, den, out=mu)
        # W += mu * conj(X) * E, with mu held as complex (imaginary part 0) so the
        # product runs complex by complex, as numpy would after casting mu
        mu_c = self._mu_c
        mu_c.real[...] = mu
        conj_x = np.conjugate(X, out=self._conj_x)  # for the shadow's update too
        grad = np.multiply(mu_c, conj_x, out=self._tmp_c)
        grad *= E
        W += grad
        mu *= pxk
        mu *= -0.5 * a2
        mu += a2
        P *= mu
        if noise:  # process noise, added every 4th block (4x): same model, cheaper
            # |W|^2 from W's (real, imag) pairs: the same sums as W.real**2 + W.imag**2,
            # without their four temporaries
            pairs = W.view(_REAL)
            squares = np.multiply(pairs, pairs, out=self._tmp_pairs)
            process_noise = np.add(squares[:, ::2], squares[:, 1::2], out=mu)
            process_noise *= 4.0 * (1.0 - a2)
            P += process_noise
        ks = len(Ws)
        shadow_power = self._ones_r[:ks] @ pxk[:ks]
        shadow_power += delta
        np.divide(0.5, shadow_power, out=shadow_power)
        step = np.multiply(Es, shadow_power, out=self._step)  # 0.5 Es / (power + delta)
        Ws += np.multiply(conj_x[:ks], step, out=grad[:ks])


def _gain(pe: _Floats, pe_s: _Floats, *, residual_lin: _Floats, rs_err: _Floats, gain: _Floats,
          over: float, over_talk: float, talk_ratio: float, floor: float) -> bool:
    """The suppressor's gain per bin into ``gain``, from this period's error power ``pe``
    and its smoothed version ``pe_s`` (already updated); ``rs_err`` row 0 holds the
    residual echo estimate r_s, row 1 is scratch. Returns True while someone talks."""
    r_s = rs_err[0]
    # residual echo decays like the room: keep a slowly released peak
    r_s *= 0.6
    np.maximum(residual_lin, r_s, out=r_s)
    # When the error holds far more than the expected residual echo, someone is
    # talking: overestimate less there, so the near end keeps its weak bins.
    error = np.maximum(pe, pe_s, out=rs_err[1])
    sums = _sum(rs_err, axis=1)
    talk = float(sums[1]) / (float(sums[0]) + 1e-12)
    talking = talk >= talk_ratio
    np.multiply(over_talk if talking else over, r_s, out=gain)
    error += 1e-12
    gain /= error
    np.subtract(1.0, gain, out=gain)
    np.maximum(floor, gain, out=gain)
    return talking


def to_pcm(scaled: _Floats) -> Pcm:
    """Int16-scaled samples to int16 with clipping, in place (audio.frames.to_int16
    without its scaling and temporaries: this runs every period)."""
    np.rint(scaled, out=scaled)
    np.maximum(scaled, -32768.0, out=scaled)
    np.minimum(scaled, 32767.0, out=scaled)
    pcm: Pcm = scaled.astype(np.int16)
    return pcm
