"""Beamforming toward the talker: MVDR with a learnt noise covariance, delay-and-sum fallback.

Both work per STFT bin on (bins, mics) spectra and are distortionless toward the steered
azimuth: a far-field source there comes out as it would sound at the array's centre.

* **Delay-and-sum** (``delay-and-sum``): align and average. Fixed, cannot cancel the
  target, and gains little at low frequencies on a small array.
* **MVDR** (``mvdr``): minimise output power under the distortionless constraint, with
  the covariance of what the array hears while the target is quiet (the TV, the fan, the
  other person). Learnt only from frames the caller marks as not the target, with
  diagonal loading so that a steering error or the talker's own reverberation cannot
  make it null the talker (the classic MVDR failure in a real room).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from edgevoice.audio.array.geometry import ArrayGeometry
from edgevoice.audio.array.stft import Complex

BeamMode = Literal["mvdr", "delay-and-sum"]
BEAM_MODES: tuple[BeamMode, ...] = ("mvdr", "delay-and-sum")


class Beamformer:
    """Per-bin weights toward an azimuth; :meth:`apply` turns (bins, mics) into (bins,)."""

    def __init__(
        self,
        geometry: ArrayGeometry,
        *,
        frame_size: int = 320,
        hop: int = 160,
        rate: int = 16000,
        mode: BeamMode = "mvdr",
        noise_time_constant_s: float = 2.0,
        diagonal_loading: float = 0.1,
        refresh_frames: int = 10,
    ) -> None:
        if mode not in BEAM_MODES:
            raise ValueError(f"beam mode {mode!r}: expected one of {', '.join(BEAM_MODES)}")
        self.geometry = geometry
        self.mode: BeamMode = mode
        self.diagonal_loading = diagonal_loading
        self.refresh_frames = refresh_frames
        self._freqs = np.fft.rfftfreq(frame_size, 1.0 / rate)
        frame_s = hop / rate
        self._alpha = float(np.exp(-frame_s / max(noise_time_constant_s, frame_s)))
        mics = geometry.mic_count
        self._noise = np.zeros((len(self._freqs), mics, mics), dtype=np.complex128)
        self._noise_frames = 0
        self._since_refresh = 0
        self.azimuth_deg = 0.0
        self._steering = self._steering_vectors(0.0)
        self._weights = self._steering / mics

    @property
    def noise_frames(self) -> int:
        """How many frames the noise covariance has learnt from."""
        return self._noise_frames

    def _steering_vectors(self, azimuth_deg: float) -> Complex:
        delays = self.geometry.delays_s(azimuth_deg)  # (N,)
        steering: Complex = np.exp(-2j * np.pi * self._freqs[:, None] * delays[None, :])
        return steering

    def steer(self, azimuth_deg: float) -> None:
        """Point the beam; MVDR weights are recomputed with the covariance learnt so far."""
        self.azimuth_deg = float(azimuth_deg) % 360.0
        self._steering = self._steering_vectors(self.azimuth_deg)
        self._recompute()

    def learn_noise(self, spectrum: Complex) -> None:
        """Fold one frame the caller judged not to be the target into the noise covariance."""
        outer = spectrum[:, :, None] * np.conj(spectrum[:, None, :])
        if self._noise_frames == 0:
            self._noise[:] = outer
        else:
            self._noise *= self._alpha
            self._noise += (1.0 - self._alpha) * outer
        self._noise_frames += 1
        self._since_refresh += 1
        if self.mode == "mvdr" and self._since_refresh >= self.refresh_frames:
            self._recompute()

    def reset_noise(self) -> None:
        self._noise[:] = 0.0
        self._noise_frames = 0
        self._recompute()

    def _recompute(self) -> None:
        self._since_refresh = 0
        mics = self.geometry.mic_count
        if self.mode == "delay-and-sum" or self._noise_frames < self.refresh_frames:
            self._weights = self._steering / mics
            return
        # loading relative to each bin's average mic power: robust to level and to a
        # steering vector that is only approximately the room's real transfer function
        power = np.real(np.trace(self._noise, axis1=1, axis2=2)) / mics
        loaded = self._noise + (self.diagonal_loading * power + 1e-12)[:, None, None] * np.eye(mics)
        solved = np.linalg.solve(loaded, self._steering[:, :, None])[:, :, 0]  # R^-1 d
        norm = np.einsum("fn,fn->f", np.conj(self._steering), solved)
        self._weights = solved / norm[:, None]

    @property
    def weights(self) -> Complex:
        return self._weights

    def residual_noise_psd(self) -> npt.NDArray[np.float64]:
        """Per bin, the learnt noise's power at the beam's output: w^H R_n w."""
        psd: npt.NDArray[np.float64] = np.real(
            np.einsum("fn,fnm,fm->f", np.conj(self._weights), self._noise, self._weights)
        )
        return psd

    def apply(self, spectrum: Complex, weights: Complex | None = None) -> Complex:
        """The beam's output spectrum, y = w^H x per bin."""
        w = self._weights if weights is None else weights
        out: Complex = np.einsum("fn,fn->f", np.conj(w), spectrum)
        return out

    def response(self, azimuth_deg: float, frequency_hz: float) -> complex:
        """The beam's complex gain for a far-field plane wave from ``azimuth_deg``."""
        delays = self.geometry.delays_s(azimuth_deg)
        index = int(np.argmin(np.abs(self._freqs - frequency_hz)))
        arriving = np.exp(-2j * np.pi * self._freqs[index] * delays)
        return complex(np.vdot(self._weights[index], arriving))
