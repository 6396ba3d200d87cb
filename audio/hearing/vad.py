"""Voice activity: a speech probability per window of audio, and a gate with hysteresis.

An engine (:class:`VadEngine`) scores fixed windows of 16 kHz int16 audio: Silero
(:mod:`.vad_silero`, the default) 512 samples, the energy engine (:mod:`.vad_energy`)
160. :class:`VoiceActivity` cuts whatever frames arrive into the engine's windows and
turns each probability into speech / not speech: speech begins when the probability
reaches ``threshold`` and lasts until it falls below ``release_threshold``, so a
probability hovering around one value does not flap.

A :class:`QuietGate` spares the model on a quiet room: while :attr:`VoiceActivity.economy`
is on (the runtime sets it while nothing is going on), a window no louder than the room's
noise floor plus ``open_db`` is not scored (probability 0); the model wakes for the first
window that is, hears the two windows before it again, and stays on for a hangover.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass

import numpy as np

from edgevoice.audio.errors import AudioError
from edgevoice.audio.frames import SAMPLE_RATE, Pcm, dbfs


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

    def another_stream(self) -> VadEngine:
        """A second, independent stream on the same model (to score another signal)."""
        raise VadError(f"the {self.name} VAD engine cannot score a second stream")


@dataclass(frozen=True, slots=True)
class VadWindow:
    """One scored window: where it sits on the audio clock, its samples and the verdict.

    ``heard`` is the same stretch of a companion signal fed beside the scored one (the
    echo canceller's linear output, which the recognizer hears better in double talk);
    :attr:`turn_audio` is what goes into a turn.
    """

    start_sample: int
    pcm: Pcm
    probability: float
    speech: bool
    heard: Pcm | None = None

    @property
    def turn_audio(self) -> Pcm:
        return self.pcm if self.heard is None else self.heard

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


class QuietGate:
    """Whether the VAD model must score a window. Pure.

    The noise floor follows the level down at once and up by ``rise_db_per_s``, so a
    steady hum is learnt and speech, which comes and goes, is not. A window at least
    ``open_db`` above the floor opens the gate for ``hangover_windows``; speech the model
    hears keeps it open.
    """

    def __init__(self, open_db: float = 6.0, *, hangover_windows: int = 30, rise_db_per_s: float = 1.0,
                 window_s: float = 0.032) -> None:
        if open_db <= 0:
            raise ValueError(f"open_db must be above 0, not {open_db}")
        self.open_db = open_db
        self.hangover_windows = hangover_windows
        self.rise_per_window = rise_db_per_s * window_s
        self.floor: float | None = None
        self._hold = hangover_windows  # let the model settle on a new stream

    def score(self, level_dbfs: float) -> bool:
        """Feed one window's level; True when the model must score it."""
        if self.floor is None or level_dbfs < self.floor:
            self.floor = level_dbfs
        else:
            self.floor = min(level_dbfs, self.floor + self.rise_per_window)
        if level_dbfs >= self.floor + self.open_db:
            self._hold = self.hangover_windows
        elif self._hold > 0:
            self._hold -= 1
        return self._hold > 0

    def keep_open(self) -> None:
        self._hold = self.hangover_windows

    def reset(self) -> None:
        self.floor = None
        self._hold = self.hangover_windows


class VoiceActivity:
    """Frames of any length in, scored windows out, on the audio clock (samples fed so far)."""

    CONTEXT_WINDOWS = 2  # what the model hears again when the quiet gate wakes it

    def __init__(self, engine: VadEngine, threshold: float = 0.5, release_threshold: float = 0.35,
                 quiet: QuietGate | None = None) -> None:
        self.engine = engine
        self.gate = SpeechGate(threshold, release_threshold)
        self.quiet = quiet
        self.economy = False  # let the quiet gate skip the model (set while nothing goes on)
        self.skipped = 0  # windows not scored, for telemetry and tests
        self._pending = np.zeros(0, dtype=np.int16)
        self._pending_heard: Pcm | None = None  # the companion signal's pending samples
        self._next_start = 0  # audio-clock sample of the first pending sample
        self._context: deque[Pcm] = deque(maxlen=self.CONTEXT_WINDOWS)
        self._asleep = False

    @property
    def asleep(self) -> bool:
        """The quiet gate skipped the last window: nothing above the room's noise floor."""
        return self._asleep

    @property
    def samples_seen(self) -> int:
        return self._next_start + len(self._pending)

    def process(self, pcm: Pcm, heard: Pcm | None = None) -> list[VadWindow]:
        """Score ``pcm``; ``heard`` (same length, optional) rides along into the windows."""
        size = self.engine.window_samples
        data = np.concatenate((self._pending, pcm)) if len(self._pending) else pcm
        if heard is not None and len(heard) != len(pcm):
            raise ValueError(f"the companion signal must match the frame: {len(heard)} != {len(pcm)}")
        companion: Pcm | None = None
        if heard is not None or self._pending_heard is not None:
            # Samples fed without a companion stand in for their own.
            head = self._pending_heard if self._pending_heard is not None else self._pending
            tail = heard if heard is not None else pcm
            companion = np.concatenate((head, tail)) if len(head) else tail
        windows: list[VadWindow] = []
        offset = 0
        while offset + size <= len(data):
            window = np.ascontiguousarray(data[offset:offset + size], dtype=np.int16)
            prob = self._score(window)
            speech = self.gate.update(prob)
            if speech and self.quiet is not None:
                self.quiet.keep_open()
            extra = None if companion is None else np.ascontiguousarray(companion[offset:offset + size])
            windows.append(VadWindow(self._next_start, window, prob, speech, extra))
            self._next_start += size
            offset += size
        self._pending = np.array(data[offset:], dtype=np.int16)
        self._pending_heard = None if companion is None else np.array(companion[offset:], dtype=np.int16)
        return windows

    def _score(self, window: Pcm) -> float:
        quiet = self.quiet
        if quiet is None:
            return self.engine.probability(window)
        wanted = quiet.score(dbfs(window)) or not self.economy
        if not wanted:
            self._asleep = True
            self._context.append(window)
            self.skipped += 1
            return 0.0
        if self._asleep:
            # Waking: the model's state is from long ago; let it hear what came just before.
            self._asleep = False
            self.engine.reset()
            for before in self._context:
                self.engine.probability(before)
            self._context.clear()
        return self.engine.probability(window)

    def reset(self) -> None:
        """Start a new stream: engine state, gate and clock go back to zero."""
        self.engine.reset()
        self.gate.reset()
        if self.quiet is not None:
            self.quiet.reset()
        self._context.clear()
        self._asleep = False
        self._pending = np.zeros(0, dtype=np.int16)
        self._pending_heard = None
        self._next_start = 0
