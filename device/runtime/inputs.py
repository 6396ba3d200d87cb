"""What happened, as the conversation feeds it to the state machine.

One frozen record per input of :mod:`.state`: its ``kind`` is what the pure transition
switches on, and its fields are exactly what that input's actions need (an onset for
the turn's timeline, the final transcript to send, the text to say). Nothing else
travels with an input, so an action cannot read a key that its input never carries.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import dataclass
from typing import ClassVar

from edgevoice.audio.hearing.events import FinalTranscript
from edgevoice.audio.speaking.tts import TtsAudio
from edgevoice.device.runtime.state import Input


@dataclass(frozen=True, slots=True)
class SpeechHeard:
    """The listener opened a turn on its own (always mode, a follow-up window, a late
    turn after the reply), from the speech onset on the audio clock."""

    onset_s: float
    kind: ClassVar[Input] = Input.SPEECH_STARTED


@dataclass(frozen=True, slots=True)
class WakeWordHeard:
    wake_word: str
    kind: ClassVar[Input] = Input.WAKE_WORD


@dataclass(frozen=True, slots=True)
class ButtonPressed:
    """The button, or a remote ``listen``: a turn from now (``onset_s``, audio clock)."""

    onset_s: float
    kind: ClassVar[Input] = Input.BUTTON_PRESS


@dataclass(frozen=True, slots=True)
class ButtonReleased:
    kind: ClassVar[Input] = Input.BUTTON_RELEASE


@dataclass(frozen=True, slots=True)
class TurnFinished:
    final: FinalTranscript
    kind: ClassVar[Input] = Input.TURN_FINAL


@dataclass(frozen=True, slots=True)
class TurnDropped:
    kind: ClassVar[Input] = Input.TURN_DISCARDED


@dataclass(frozen=True, slots=True)
class ReplyAudioStarted:
    kind: ClassVar[Input] = Input.REPLY_AUDIO_STARTED


@dataclass(frozen=True, slots=True)
class ReplyDone:
    kind: ClassVar[Input] = Input.REPLY_DONE


@dataclass(frozen=True, slots=True)
class ReplyFailed:
    kind: ClassVar[Input] = Input.REPLY_FAILED


@dataclass(frozen=True, slots=True)
class BargedIn:
    """The detector took the person's speech over the reply, from ``onset_s``."""

    onset_s: float
    kind: ClassVar[Input] = Input.BARGE_IN


@dataclass(frozen=True, slots=True)
class MuteSet:
    muted: bool

    @property
    def kind(self) -> Input:
        return Input.MUTE if self.muted else Input.UNMUTE


@dataclass(frozen=True, slots=True)
class ResetAsked:
    """"Start over", MQTT ``reset_session``, the idle timeout (``quiet``: no earcon)."""

    quiet: bool = False
    kind: ClassVar[Input] = Input.RESET


@dataclass(frozen=True, slots=True)
class SayAsked:
    """Speak ``text`` now, or play ``audio`` made elsewhere (an announcement) under
    ``utterance_id``: not a reply to a turn."""

    text: str
    audio: AsyncIterable[TtsAudio] | None = None
    utterance_id: str | None = None
    kind: ClassVar[Input] = Input.SAY


StateInput = (SpeechHeard | WakeWordHeard | ButtonPressed | ButtonReleased | TurnFinished | TurnDropped
              | ReplyAudioStarted | ReplyDone | ReplyFailed | BargedIn | MuteSet | ResetAsked | SayAsked)


def onset_of(happened: StateInput) -> float | None:
    """When the person's speech (or the press) began, for inputs that start a turn."""
    if isinstance(happened, SpeechHeard | ButtonPressed | BargedIn):
        return happened.onset_s
    return None
