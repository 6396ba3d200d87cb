"""What the hearing pipeline tells the runtime: the :class:`Listener`'s events.

Each knows its bus ``type`` and its fields (``as_dict()``); the runtime publishes the
public ones as they are. ``EarlyTranscript``, ``SpeechResumed`` and ``FinalPending`` are
for the runtime only, never published. Times are on the audio clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from edgevoice.audio.frames import Pcm
from edgevoice.audio.hearing.asr import AsrResult, Word
from edgevoice.audio.hearing.endpoint import SpeechStarted


@dataclass(frozen=True, slots=True, eq=False)
class SpeechStopped:
    """Speech ended at ``t``; ``audio`` is the whole turn from ``audio_start`` (pre-roll
    included) to ``detected``; ``reason`` is an :class:`EndReason`."""

    type: ClassVar[str] = "input.speech.stopped"
    t: float
    reason: str
    detected: float
    audio_start: float
    audio: Pcm = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"audio_s": round(self.t, 3), "detected_s": round(self.detected, 3), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class WakeWordDetected:
    type: ClassVar[str] = "input.wake_word"
    t: float
    name: str
    probability: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "audio_s": round(self.t, 3), "probability": round(self.probability, 3)}


@dataclass(frozen=True, slots=True)
class PartialTranscript:
    type: ClassVar[str] = "transcript.user.delta"
    text: str
    t: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(frozen=True, slots=True)
class FinalTranscript:
    """Word times are on the audio clock; ``start``/``end`` bound the speech."""

    type: ClassVar[str] = "transcript.user"
    text: str
    words: tuple[Word, ...]
    low_confidence: bool
    start: float
    end: float
    confidence: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "words": [w.as_dict() for w in self.words],
                "low_confidence": self.low_confidence, "confidence": round(self.confidence, 3),
                "start_s": round(self.start, 3), "end_s": round(self.end, 3)}


@dataclass(frozen=True, slots=True)
class TurnDiscarded:
    """A turn that goes nowhere: ``no_speech`` (opened, nobody spoke), ``no_words``
    (the ASR heard nothing), ``disabled`` (listening was switched off mid-turn)."""

    type: ClassVar[str] = "input.turn.discarded"
    reason: str
    t: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "audio_s": round(self.t, 3)}


@dataclass(frozen=True, slots=True, eq=False)
class EarlyTranscript:
    """The early final was told at ``t`` (the pause reached ``early_final_ms``; its decode may
    have begun sooner, at ``early_decode_ms``): ``result()`` is the turn's transcript should it end
    now (it may wait for the engine's own thread: call it off the front end's). Not
    published: the runtime may prepare a reply on it (device/runtime/speculation.py).
    ``text_hold``: words that read mid-thought keep this pause open ``hold_silence_ms``.
    ``earliest_end_s``: the soonest this pause can end the turn, if it goes on (the turn
    model's check, or the short silence; None: not known)."""

    type: ClassVar[str] = "input.turn.early_final"
    t: float
    result: Callable[[], AsrResult] = field(repr=False)
    text_hold: bool = False
    earliest_end_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"audio_s": round(self.t, 3)}


@dataclass(frozen=True, slots=True)
class SpeechResumed:
    """Speech came back at ``t`` after an early final: that transcript is not the turn's.
    Not published."""

    type: ClassVar[str] = "input.speech.resumed"
    t: float

    def as_dict(self) -> dict[str, Any]:
        return {"audio_s": round(self.t, 3)}


@dataclass(frozen=True, slots=True, eq=False)
class FinalPending:
    """The turn's final pass is still decoding (:attr:`Listener.defer_final`): ``resolve()``
    waits for it and gives the events that replace this one (a :class:`FinalTranscript`,
    or :class:`TurnDiscarded` ``no_words``). Call it off the front end's thread, and deliver
    nothing that came after it before it. Not published."""

    type: ClassVar[str] = "input.turn.final_pending"
    t: float
    resolve: Callable[[], list[HearingEvent]] = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"audio_s": round(self.t, 3)}


HearingEvent = (
    SpeechStarted | SpeechStopped | WakeWordDetected | PartialTranscript | FinalTranscript | TurnDiscarded
    | EarlyTranscript | SpeechResumed | FinalPending
)


__all__ = [
    "SpeechStopped",
    "WakeWordDetected",
    "PartialTranscript",
    "FinalTranscript",
    "TurnDiscarded",
    "EarlyTranscript",
    "SpeechResumed",
    "FinalPending",
    "HearingEvent",
    "SpeechStarted",
]
