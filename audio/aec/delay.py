"""Bulk-delay estimation between the reference (what the speaker was sent) and the mic.

Pure numpy, no clock: fed one period of each at a time. Every ``hop`` it correlates the
last ~256 ms of the microphone with the reference over all lags up to ``max_delay_ms``
on 4 kHz decimated signals, averages the cross-spectra over time (so near-end speech and
noise wash out) and picks the PHAT-weighted peak. A new delay is accepted only when the
peak stands clearly above the rest; slow clock drift moves the peak and is followed.

    est = DelayEstimator(max_delay_ms=500)
    est.push(mic_period, reference_period)
    est.delay_samples   # None until locked, then the delay at 16 kHz
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from edgevoice.audio.aec.fft import irfft, rfft
from edgevoice.audio.frames import SAMPLE_RATE

_DECIMATE = 4
_Floats = npt.NDArray[np.float64]


class DelayEstimator:
    """GCC-PHAT over decimated signals with a time-averaged cross-spectrum."""

    def __init__(self, *, max_delay_ms: float = 500.0, window: int = 1024, hop_periods: int = 16,
                 smoothing: float = 0.85, min_confidence: float = 15.0) -> None:
        rate = SAMPLE_RATE // _DECIMATE
        self._max_lag = int(max_delay_ms * rate / 1000)
        self._window = window
        self._hop = hop_periods
        self._smoothing = smoothing
        self._min_confidence = min_confidence
        self._ref_len = window + self._max_lag
        self._nfft = 1 << int(np.ceil(np.log2(self._ref_len + window)))
        self._mic = np.zeros(window, dtype=np.float64)
        self._ref = np.zeros(self._ref_len, dtype=np.float64)
        self._cross = np.zeros(self._nfft // 2 + 1, dtype=np.complex128)
        self._periods = 0
        self._hann = np.hanning(window)
        # the windowed mic and the reference, zero-padded: one FFT for both
        self._spec_in = np.zeros((2, self._nfft))
        self._spectra = np.empty((2, self._nfft // 2 + 1), dtype=np.complex128)
        self._corr = np.empty(self._nfft)
        # the periods since the last hop, mic in row 0 and reference in row 1
        self._pending = np.zeros((2, 0))
        self._filled = 0
        self._active_hops = 0
        self.delay_samples: int | None = None
        self.confidence = 0.0

    def reset(self) -> None:
        self._filled = 0
        self._mic[:] = 0.0
        self._ref[:] = 0.0
        self._cross[:] = 0.0
        self._periods = 0
        self._active_hops = 0
        self.delay_samples = None
        self.confidence = 0.0

    def push(self, mic: npt.NDArray[np.floating], reference: npt.NDArray[np.floating]) -> bool:
        """Add one period (float samples); returns True when the estimate was refreshed."""
        start, end = self._slot(len(mic))
        self._pending[0, start:end] = mic
        self._pending[1, start:end] = reference
        return self._advance(end)

    def push_pcm(self, mic: npt.NDArray[np.int16], reference: npt.NDArray[np.int16],
                 scale: float) -> tuple[_Floats, _Floats]:
        """:meth:`push` for int16 periods: converts them (times ``scale``) into the
        estimator's own buffer and returns those float periods, which stay valid until
        the next push (the echo canceller uses them instead of converting twice)."""
        start, end = self._slot(len(mic))
        mic_f = np.multiply(mic, scale, out=self._pending[0, start:end])
        ref_f = np.multiply(reference, scale, out=self._pending[1, start:end])
        self._advance(end)
        return mic_f, ref_f

    def _slot(self, n: int) -> tuple[int, int]:
        start = self._filled
        end = start + n
        if end > self._pending.shape[1]:  # first use (or longer periods): room for a hop
            grown = np.zeros((2, max(end, n * self._hop)))
            grown[:, :start] = self._pending[:, :start]
            self._pending = grown
        return start, end

    def _advance(self, end: int) -> bool:
        self._filled = end
        self._periods += 1
        if self._periods % self._hop:
            return False
        # decimate and slide the windows once per hop, not once per period
        # the sum of each group of _DECIMATE samples, added in order (what .sum(axis=-1)
        # gives, bit for bit) as strided adds: a reduction over 4 elements costs numpy a
        # loop set-up per group
        groups = self._pending[:, : self._filled].reshape(2, -1, _DECIMATE)
        sums = groups[:, :, 0] + groups[:, :, 1]
        for i in range(2, _DECIMATE):
            sums += groups[:, :, i]
        self._filled = 0
        for buf, new in ((self._mic, sums[0]), (self._ref, sums[1])):
            n = min(len(new), len(buf))
            buf[:-n] = buf[n:]
            buf[-n:] = new[-n:]
        return self._estimate()

    def _estimate(self) -> bool:
        # Only the part of the reference the current mic window can echo matters.
        ref_energy = float(np.dot(self._ref, self._ref))
        if ref_energy < 1e-6 * self._ref_len:
            return False
        spec_in = self._spec_in
        np.multiply(self._mic, self._hann, out=spec_in[0, : self._window])
        spec_in[1, : self._ref_len] = self._ref
        mic_spec, ref_spec = rfft(spec_in, out=self._spectra)
        self._cross *= self._smoothing
        # (1 - smoothing) * conj(mic) * ref, in that order, without temporaries
        update = np.conjugate(mic_spec, out=mic_spec)
        update *= 1.0 - self._smoothing
        update *= ref_spec
        self._cross += update
        self._active_hops += 1
        weighted = self._cross / (np.abs(self._cross) + 1e-12)
        corr = irfft(weighted, out=self._corr)[: self._max_lag + 1]
        # corr[k] peaks at k = max_lag - delay (the reference window starts max_lag earlier).
        score = np.abs(corr[::-1])
        peak = int(np.argmax(score))
        # the median (odd length: the middle element after a partial sort)
        if len(score) % 2:
            middle = float(np.partition(score, len(score) // 2)[len(score) // 2])
        else:
            middle = float(np.median(score))
        spread = middle + 1e-12
        self.confidence = float(score[peak]) / spread
        if self._active_hops >= 3 and self.confidence >= self._min_confidence:
            self.delay_samples = peak * _DECIMATE
            return True
        return False

    @staticmethod
    def decimated_lag_to_ms(lag: int) -> float:
        return 1000.0 * lag / SAMPLE_RATE


def estimate_delay(mic: _Floats, reference: _Floats, *, max_delay_ms: float = 500.0) -> int | None:
    """Offline helper: run the estimator over whole recordings; delay in 16 kHz samples."""
    est = DelayEstimator(max_delay_ms=max_delay_ms)
    period = 160
    n = min(len(mic), len(reference)) // period * period
    for start in range(0, n, period):
        end = start + period
        est.push(mic[start:end], reference[start:end])
    return est.delay_samples
