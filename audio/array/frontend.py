"""The array stage: multi-channel periods in, one steered mono period out.

Per period (hop samples × mics): STFT, per-pair PHAT cross-spectra, the frame's own
dominant direction, then the beam. The caller says whether the listener currently
hears speech (its VAD on the previous periods); that drives the state:

* **Between segments** every frame teaches the noise covariance, and the frames' SRP
  maps build a slow *background* map: where the steady sources (a TV, a fan) are.
* **In a segment** the frames' SRP maps are summed; the talker's direction is the peak of
  that sum *minus the background*, so a TV that was already playing does not win the
  vote. After ``lock_ms`` of speech the beam is steered there for the rest of the turn.
  Speech frames that point well away from the beam (the TV talking over the person)
  keep teaching the noise covariance; frames toward the talker never do.

Pure: no clock, no I/O; the output is ``overlap - 1`` hops late (the STFT's overlap-add).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgevoice.audio.array.beamformer import Beamformer, BeamMode
from edgevoice.audio.array.doa import SrpPhat, angle_difference_deg
from edgevoice.audio.array.geometry import ArrayGeometry
from edgevoice.audio.array.stft import Real, StreamingIstft, StreamingStft

_EPS = 1e-12


@dataclass(frozen=True, slots=True)
class ArraySettings:
    """How the array stage listens (plain parameters; the device's ``[array]`` maps here)."""

    beam: BeamMode = "mvdr"
    follow_talker: bool = True
    overlap: int = 4
    lock_ms: int = 200
    target_width_deg: float = 30.0
    learn_during_speech: bool = False
    noise_hangover_ms: int = 300
    background_time_constant_s: float = 4.0
    noise_time_constant_s: float = 2.0
    diagonal_loading: float = 0.01
    initial_azimuth_deg: float = 0.0
    post_filter: bool = False
    post_filter_floor_db: float = -12.0


@dataclass(frozen=True, slots=True)
class SegmentEstimate:
    direction_deg: float
    confidence: float


class ArrayFrontEnd:
    """Direction finding and beamforming over one array, period by period."""

    def __init__(
        self,
        geometry: ArrayGeometry,
        settings: ArraySettings | None = None,
        *,
        hop: int = 160,
        rate: int = 16000,
    ) -> None:
        self.geometry = geometry
        self.settings = settings or ArraySettings()
        self.hop = hop
        self.rate = rate
        frame_size = self.settings.overlap * hop
        self.srp = SrpPhat(geometry, frame_size=frame_size, rate=rate)
        self.beamformer = Beamformer(
            geometry,
            frame_size=frame_size,
            hop=hop,
            rate=rate,
            mode=self.settings.beam,
            noise_time_constant_s=self.settings.noise_time_constant_s,
            diagonal_loading=self.settings.diagonal_loading,
        )
        self.beamformer.steer(self.settings.initial_azimuth_deg)
        self._stft = StreamingStft(hop, geometry.mic_count, self.settings.overlap)
        self._istft = StreamingIstft(hop, self.settings.overlap)
        self._other_stft: StreamingStft | None = None  # for process_pair's second stream
        self._other_istft: StreamingIstft | None = None
        frame_s = hop / rate
        self._background_alpha = float(np.exp(-frame_s / self.settings.background_time_constant_s))
        self._background: Real | None = None
        self._segment_map: Real | None = None
        self._segment_frames = 0
        self._lock_frames = max(1, round(self.settings.lock_ms / 1000 / frame_s))
        self._hangover_frames = round(self.settings.noise_hangover_ms / 1000 / frame_s)
        self._since_speech = self._hangover_frames
        self._locked = False
        self._smoothed: complex | None = None
        self._output_psd: Real | None = None
        self._floor = 10.0 ** (self.settings.post_filter_floor_db / 20.0)
        self.last_weights = self.beamformer.weights
        self.last_frame_direction_deg: float | None = None
        self.last_segment: SegmentEstimate | None = None
        self._beam_held = False

    def hold(self, held: bool) -> None:
        """While held the beam keeps its weights: it neither steers nor learns noise (an
        echo canceller after it models the path through those weights). Directions are
        still estimated."""
        self._beam_held = held

    @property
    def steered_deg(self) -> float:
        return self.beamformer.azimuth_deg

    @property
    def in_segment(self) -> bool:
        return self._segment_frames > 0

    @property
    def smoothed_deg(self) -> float | None:
        """A moving average of the talker's direction over segments (telemetry, LEDs)."""
        if self._smoothed is None:
            return None
        return float(np.degrees(np.angle(self._smoothed)) % 360.0)

    def process(self, period: npt.NDArray[np.generic], speech: bool) -> Real:
        """One (hop, mics) period → the beam's mono period (float, int16 scale), ``overlap - 1`` hops late."""
        spectrum = self._stft.analyse(np.asarray(period, dtype=np.float64))
        return self._istft.synthesise(self._listen(spectrum, speech))

    def process_pair(self, period: npt.NDArray[np.generic], other: npt.NDArray[np.generic],
                     speech: bool) -> tuple[Real, Real]:
        """:meth:`process` on ``period``, and the same beam (the same weights, frame by
        frame) applied to ``other``: per-mic echo cancellers' linear outputs steer the beam,
        and their residual-suppressed outputs go through it too."""
        if self._other_stft is None:
            self._other_stft = StreamingStft(self.hop, self.geometry.mic_count, self.settings.overlap)
            self._other_istft = StreamingIstft(self.hop, self.settings.overlap)
        assert self._other_istft is not None
        spectrum = self._stft.analyse(np.asarray(period, dtype=np.float64))
        beam = self._istft.synthesise(self._listen(spectrum, speech))
        other_spectrum = self._other_stft.analyse(np.asarray(other, dtype=np.float64))
        other_beam = self.beamformer.apply(other_spectrum, self.last_weights)
        return beam, self._other_istft.synthesise(other_beam)

    def _listen(self, spectrum: npt.NDArray[np.complex128], speech: bool) -> npt.NDArray[np.complex128]:
        """One frame's direction finding, steering and noise learning; the beam's spectrum."""
        cross = self.srp.cross_spectra(spectrum)
        frame_map = self.srp.power(cross)
        frame_direction = float(self.srp.azimuths[int(np.argmax(frame_map))])
        self.last_frame_direction_deg = frame_direction
        if speech:
            self._since_speech = 0
            self._segment_map = frame_map if self._segment_map is None else self._segment_map + frame_map
            self._segment_frames += 1
            if (self.settings.follow_talker and not self._locked and not self._beam_held
                    and self._segment_frames >= self._lock_frames):
                estimate = self._segment_estimate()
                if estimate is not None:
                    self.beamformer.steer(estimate.direction_deg)
                    self._locked = True
            if (
                self.settings.learn_during_speech
                and not self._beam_held
                and angle_difference_deg(frame_direction, self.steered_deg) > self.settings.target_width_deg
            ):
                self.beamformer.learn_noise(spectrum)
        else:
            if self._segment_frames:
                self._close_segment()
            self._since_speech += 1
            self._background = (
                frame_map
                if self._background is None
                else (self._background_alpha * self._background + (1.0 - self._background_alpha) * frame_map)
            )
            # the talker's reverberation outlasts the VAD's segment: learning it as noise
            # would teach the beam to cancel the talker
            if self._since_speech > self._hangover_frames and not self._beam_held:
                self.beamformer.learn_noise(spectrum)
        output = self.beamformer.apply(spectrum)
        self.last_weights = self.beamformer.weights
        if self.settings.post_filter and self.beamformer.noise_frames:
            gain = self._post_filter_gain(output)
            output = output * gain
            self.last_weights = self.beamformer.weights * gain[:, None]
        return output

    def _post_filter_gain(self, output: npt.NDArray[np.complex128]) -> Real:
        # Wiener gain against the learnt noise's residual at the beam output (the MVDR +
        # single-channel Wiener factorisation of the multichannel Wiener filter), on a
        # lightly smoothed output PSD, floored so speech is never gated to nothing
        power = np.abs(output) ** 2
        self._output_psd = power if self._output_psd is None else 0.6 * self._output_psd + 0.4 * power
        noise = self.beamformer.residual_noise_psd()
        gain: Real = np.clip(1.0 - noise / (self._output_psd + 1e-9), self._floor, 1.0)
        return gain

    def _segment_estimate(self) -> SegmentEstimate | None:
        if self._segment_map is None or self._segment_frames == 0:
            return None
        mean_map = self._segment_map / self._segment_frames
        if self._background is None:
            novelty = mean_map
        else:
            # remove only the background's peaks: subtracting a whole map would turn its
            # troughs (the directions nothing comes from) into false peaks
            novelty = mean_map - np.maximum(self._background - np.median(self._background), 0.0)
        best = int(np.argmax(novelty))
        spread = float(novelty.max() - np.median(novelty))
        confidence = max(0.0, min(1.0, spread / (float(np.abs(mean_map).max()) + _EPS)))
        return SegmentEstimate(float(self.srp.azimuths[best]), confidence)

    def current_direction(self) -> SegmentEstimate | None:
        """The open segment's direction so far (None between segments)."""
        return self._segment_estimate()

    def _close_segment(self) -> None:
        estimate = self._segment_estimate()
        if estimate is not None:
            # a short segment still steers the next turn
            if self.settings.follow_talker and not self._locked and not self._beam_held:
                self.beamformer.steer(estimate.direction_deg)
            unit = complex(np.exp(1j * np.radians(estimate.direction_deg)))
            self._smoothed = unit if self._smoothed is None else 0.5 * self._smoothed + 0.5 * unit
        self.last_segment = estimate
        self._segment_map = None
        self._segment_frames = 0
        self._locked = False

    def end_of_input(self) -> SegmentEstimate | None:
        """Close an open segment at the end of a recording; returns its estimate."""
        if self._segment_frames:
            self._close_segment()
            return self.last_segment
        return None
