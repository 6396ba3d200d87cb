"""Direction of arrival: SRP-PHAT through per-pair GCC-PHAT, and a speech-segment tracker.

For each microphone pair the PHAT-weighted cross-spectrum (phase only, so every
frequency votes equally and reverberation's coloured tails weigh less) is turned into a
cross-correlation by an oversampled inverse FFT. The steered response power of a
direction is the sum over pairs of those correlations at the lags that direction
implies. Everything here is pure: spectra in, angles out, no clock.
"""

from __future__ import annotations

import itertools

import numpy as np

from edgevoice.audio.array.geometry import ArrayGeometry
from edgevoice.audio.array.stft import Complex, Real

_EPS = 1e-12


class SrpPhat:
    """Steered response power over an azimuth grid, from (bins, mics) STFT spectra."""

    def __init__(
        self,
        geometry: ArrayGeometry,
        *,
        frame_size: int = 320,
        rate: int = 16000,
        resolution_deg: float = 2.0,
        band_hz: tuple[float, float] = (200.0, 6000.0),
        oversample: int = 8,
    ) -> None:
        self.geometry = geometry
        fft_size = frame_size
        freqs = np.fft.rfftfreq(fft_size, 1.0 / rate)
        self._band = (freqs >= band_hz[0]) & (freqs <= band_hz[1])
        self._pairs = list(itertools.combinations(range(geometry.mic_count), 2))
        self._left = np.array([i for i, _ in self._pairs])
        self._right = np.array([j for _, j in self._pairs])
        # a linear array cannot tell front from back: search one half-plane only
        span = 180.0 if geometry.is_linear else 360.0
        self.azimuths: Real = np.arange(
            0.0, span + (resolution_deg / 2 if span == 180.0 else 0.0), resolution_deg
        )
        self._lag_count = max(fft_size * oversample, 2560)
        self._oversample = oversample
        delays = geometry.delays_s(self.azimuths)  # (A, N)
        tdoa = delays[:, self._left] - delays[:, self._right]  # (A, P): d_i - d_j
        lags = np.rint(tdoa * rate * self._lag_count / fft_size).astype(np.int64)
        self._lag_index = np.mod(lags, self._lag_count)  # circular correlation index per (A, P)
        self._pair_columns = np.arange(len(self._pairs))[None, :]

    @property
    def pair_count(self) -> int:
        return len(self._pairs)

    def cross_spectra(self, spectrum: Complex) -> Complex:
        """PHAT-normalised cross-spectra (pairs, bins) of one frame; out-of-band bins are 0."""
        cross = spectrum[:, self._left] * np.conj(spectrum[:, self._right])  # (F, P)
        cross /= np.abs(cross) + _EPS
        cross[~self._band] = 0.0
        out: Complex = cross.T
        return out

    def power(self, cross: Complex) -> Real:
        """Steered response power per azimuth for summed cross-spectra (pairs, bins)."""
        correlation = np.fft.irfft(cross, n=self._lag_count, axis=1)  # (P, lags)
        # X_i X_j^* = |S|^2 exp(-j w (d_i - d_j)): its correlation peaks at lag d_i - d_j
        srp: Real = correlation[self._pair_columns, self._lag_index].sum(axis=1)
        return srp

    def direction(self, cross: Complex) -> tuple[float, float]:
        """(azimuth in degrees, peak sharpness 0..1) of summed cross-spectra."""
        srp = self.power(cross)
        best = int(np.argmax(srp))
        spread = float(srp.max() - srp.mean())
        norm = float(np.abs(srp).max()) + _EPS
        return float(self.azimuths[best]), max(0.0, min(1.0, spread / norm))


def angle_difference_deg(a: float, b: float) -> float:
    """The smallest absolute difference of two azimuths, 0..180."""
    return abs((a - b + 180.0) % 360.0 - 180.0)
