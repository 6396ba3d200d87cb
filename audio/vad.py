"""Voice activity: a speech probability per window of audio, and a gate with hysteresis.

An engine (:class:`VadEngine`) scores fixed windows of 16 kHz int16 audio: Silero
(:mod:`.vad_silero`, the default) 512 samples, the energy engine (:mod:`.vad_energy`)
160. :class:`VoiceActivity` cuts whatever frames arrive into the engine's windows and
turns each probability into speech / not speech: speech begins when the probability
reaches ``threshold`` and lasts until it falls below ``release_threshold``, so a
probability hovering around one value does not flap.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from edgevoice.audio.errors import AudioError
from edgevoice.audio.frames import SAMPLE_RATE, Pcm


class VadError(AudioError):
    code = "vad_error"


class VadEngine(ABC):
    """Scores one window of audio at a time; keeps whatever state the model needs."""

    name: str = "vad"
    window_samples: int = 512

    @abstractmethod
    def probability(self, window: Pcm) -> float:
        """Speech probability (0..1) of exactly ``window_samples`` samples of 16 kHz audio."""

    @abstractmethod
    def reset(self) -> None:
        """Forget the stream so far (a new stream starts)."""


@dataclass(frozen=True, slots=True)
class VadWindow:
    """One scored window: where it sits on the audio clock, its samples and the verdict."""

    start_sample: int
    pcm: Pcm
    probability: float
    speech: bool

    @property
    def start_s(self) -> float:
        return self.start_sample / SAMPLE_RATE

    @property
    def end_s(self) -> float:
        return (self.start_sample + len(self.pcm)) / SAMPLE_RATE


class SpeechGate:
    """Hysteresis: on at ``threshold``, off below ``release_threshold``. Pure."""

    def __init__(self, threshold: float = 0.5, release_threshold: float = 0.35) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"VAD threshold must be in (0, 1], not {threshold}")
        if not 0.0 <= release_threshold <= threshold:
            raise ValueError(
                f"VAD release threshold must be in [0, threshold={threshold}], not {release_threshold}"
            )
        self.threshold = threshold
        self.release_threshold = release_threshold
        self.speech = False

    def update(self, probability: float) -> bool:
        if self.speech:
            self.speech = probability >= self.release_threshold
        else:
            self.speech = probability >= self.threshold
        return self.speech

    def reset(self) -> None:
        self.speech = False


class VoiceActivity:
    """Frames of any length in, scored windows out, on the audio clock (samples fed so far)."""

    def __init__(self, engine: VadEngine, threshold: float = 0.5, release_threshold: float = 0.35) -> None:
        self.engine = engine
        self.gate = SpeechGate(threshold, release_threshold)
        self._pending = np.zeros(0, dtype=np.int16)
        self._next_start = 0  # audio-clock sample of the first pending sample

    @property
    def samples_seen(self) -> int:
        return self._next_start + len(self._pending)

    def process(self, pcm: Pcm) -> list[VadWindow]:
        size = self.engine.window_samples
        data = np.concatenate((self._pending, pcm)) if len(self._pending) else pcm
        windows: list[VadWindow] = []
        offset = 0
        while offset + size <= len(data):
            window = np.ascontiguousarray(data[offset:offset + size], dtype=np.int16)
            prob = self.engine.probability(window)
            windows.append(VadWindow(self._next_start, window, prob, self.gate.update(prob)))
            self._next_start += size
            offset += size
        self._pending = np.array(data[offset:], dtype=np.int16)
        return windows

    def reset(self) -> None:
        """Start a new stream: engine state, gate and clock go back to zero."""
        self.engine.reset()
        self.gate.reset()
        self._pending = np.zeros(0, dtype=np.int16)
        self._next_start = 0
