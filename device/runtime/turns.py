"""What a conversation is made of: one user turn and its reply, the counters, the
conversation's settings, and the remote pipeline a turn may be handed to (Home
Assistant's, over the ESPHome API). Plain records and small pure helpers; the
:class:`~edgevoice.device.runtime.conversation.Conversation` drives them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from edgevoice.audio.hearing.modes import ListenMode
from edgevoice.audio.speaking.tts import TtsAudio
from edgevoice.device.runtime.metrics import TurnTimeline
from edgevoice.device.speaking.reply import ReplyOutcome

# A turn that began during the device's own speech, was never confirmed as a
# barge-in, but went on this long after the reply ended, is the person's next turn.
LATE_TURN_AFTER_REPLY_S = 0.3


class RemotePipeline(Protocol):
    """Where a turn's reply comes from when not from the agent: Home Assistant's pipeline
    over the ESPHome API (``device/esphome/voice.py``). While ``active``, every opened
    turn is announced (its audio streams from there), a finished one is handed over,
    and the reply is the audio :meth:`reply` yields, played with the play cursor."""

    @property
    def active(self) -> bool: ...

    def turn_started(self, turn_id: str, *, wake_word: str | None = None,
                     onset_s: float | None = None) -> None: ...

    def turn_abandoned(self, turn_id: str) -> None: ...

    def handles(self, turn_id: str) -> bool: ...

    def reply(self, turn_id: str, text: str) -> AsyncIterator[TtsAudio]: ...


@dataclass(slots=True)
class Turn:
    """One user turn and the reply to it."""

    timeline: TurnTimeline
    accepted: bool = True  # False: began while the device spoke, not (yet) a barge-in
    barge_in: bool = False  # this turn interrupted the previous reply
    text: str = ""
    outcome: ReplyOutcome | None = None  # how its reply ended (the speaker hands it back)
    remote: bool = False  # answered by the RemotePipeline, not the agent


@dataclass(slots=True)
class Counters:
    turns: int = 0
    barge_ins: int = 0
    false_barge_ins: int = 0
    discarded: int = 0
    agent_errors: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConversationSettings:
    mode: ListenMode = ListenMode.ALWAYS
    push_to_talk: bool = True
    follow_up_s: float = 5.0
    session_idle_reset_s: float = 300.0
    failure_phrase: str = "Sorry, I couldn't get an answer. Please try again."
    log_transcripts: bool = False
    speculate: str = "auto"  # [llm] speculate (device/runtime/speculation.py)
    speculate_margin_ms: int = 100  # [llm] speculate_margin_ms


def remaining_text(spoken: str, heard: str) -> str:
    """The rest of ``spoken`` from the sentence in which ``heard`` stopped."""
    from edgevoice.device.speaking.sentences import SentenceSplitter

    splitter = SentenceSplitter()
    sentences = splitter.feed(spoken) + splitter.flush()
    consumed = 0
    for index, sentence in enumerate(sentences):
        consumed += len(sentence) + 1
        if consumed > len(heard) + 1:
            return " ".join(sentences[index:])
    return ""


async def once(text: str) -> AsyncIterator[str]:
    yield text


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


