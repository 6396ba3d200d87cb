"""A reply prepared in the silence that ends a turn (speculation).

The listener runs the recognizer's final pass once the speech has paused
``[asr] early_final_ms`` (or when the turn model is asked), inside the silence that
ends the turn, and tells the conversation (``EarlyTranscript``). From that text the
agent request goes out at once and the first piece is synthesized, held: nothing plays,
nothing is published. When the turn really ends and its final text is the same
(compared without case and punctuation) the held reply is released and plays at once;
the end-of-turn wait then overlaps the agent's first words and piper's first piece
instead of preceding them.

It is dropped, silently, when the person speaks again (``SpeechResumed``), when the
final text differs, when the turn goes elsewhere (a control, a ringing timer's "stop",
mute, a reset, an announcement) and when the request or its synthesis fails before the
turn ended; the turn then proceeds exactly as without speculation, once the dropped
request is closed. A dropped attempt leaves nothing: no event (its ``reply.requested``
is held until release), no history (the agent forgets the request), no tool run, no
mark on the turn but the count of attempts and why the last was dropped.

Not prepared at all: an early final whose words read mid-thought ("set a timer for") while
the text hold is on (``[endpoint] hold_silence_ms``): that pause cannot end the turn for
the hold's length, and the person nearly always goes on.

Sent in time, not at once: a person hesitates inside a phrase, and every hesitation longer
than the early final closes a request unread. Once a finished reply has shown the agent's
lead (from the reply's start to its first audio; the longest of the last few), the request
waits in the pause until its first audio is due ``[llm] speculate_margin_ms`` before the
pause can end the turn (the short silence, or the turn model's check). A hesitation that
ends sooner sends nothing; a turn that ends while it waits makes its request as without
speculation. With a slow agent, or a turn model, that moment has already passed: at once.

Never speculated: agents whose requests act (``homeassistant`` runs commands), the
built-in ``local`` agent (it acts on the device, and answers in a few ms, so there is
nothing to gain) and the ``operator`` (a person); the HTTP ``agent`` provider only with
``[llm] speculate = "on"`` (its server may keep state per request). Tools: a reply that
starts with a tool call is dropped (the real turn asks again); a tool call after some
text waits until the turn is committed.

The decisions (:func:`speculates`, :func:`start_refusal`, :func:`send_delay_s`,
:func:`commit_refusal`, :func:`on_tool_call`, :class:`AgentLead`) are pure;
:class:`Speculator` carries them out for the conversation.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING

from edgevoice.audio.hearing.asr import AsrResult
from edgevoice.audio.hearing.events import EarlyTranscript, FinalTranscript, SpeechResumed
from edgevoice.audio.hearing.text_reader import reading_of
from edgevoice.device.agents import AgentClient, UserTurn
from edgevoice.device.agents.tools import TOOL_GATE
from edgevoice.device.events import Event, EventBus
from edgevoice.device.runtime import sources
from edgevoice.device.runtime.controls import control_of, normalise
from edgevoice.device.runtime.metrics import Mark, TurnTimeline
from edgevoice.device.runtime.state import State
from edgevoice.device.runtime.turns import Turn
from edgevoice.device.speaking.reply import HeldReply

if TYPE_CHECKING:
    from edgevoice.device.runtime.conversation import Conversation

_LOGGER = logging.getLogger(__name__)


class Speculate(StrEnum):
    """``[llm] speculate``."""

    AUTO = "auto"  # stateless chat providers
    ON = "on"  # also the HTTP agent contract
    OFF = "off"


# Chat completions whose request changes nothing on the server: speculated on auto.
STATELESS = frozenset({"openai", "ollama"})
# A server of the agent contract may keep state per request: only when the user says so.
OPT_IN = frozenset({"agent"})


class Drop(StrEnum):
    """Why a prepared reply was dropped (``metrics.turn`` ``speculation``)."""

    RESUMED = "resumed"  # the person went on speaking
    DIFFERENT = "different"  # the turn's final text is not the early one
    REPLACED = "replaced"  # a later early final of the same turn
    TOOL_CALL = "tool_call"  # the reply began with a tool call
    FAILED = "failed"  # the request or its synthesis failed before the turn ended
    NOT_READY = "not_ready"  # the turn ended before the early text was known
    NOT_SENT = "not_sent"  # the turn went elsewhere, or listening ended without it


# metrics.turn "speculation": the reply played was the prepared one, or none of them was
USED = "used"
DROPPED = "dropped"


# --- the decisions (pure) --------------------------------------------------------------------

def speculates(setting: str, provider: str) -> bool:
    """Whether replies of ``provider`` may be prepared ahead under ``[llm] speculate``."""
    if setting == Speculate.OFF:
        return False
    if provider in STATELESS:
        return True
    return setting == Speculate.ON and provider in OPT_IN


def start_refusal(*, allowed: bool, listening: bool, accepted: bool, remote: bool,
                  text: str | None = None, held: bool = False) -> str | None:
    """Why an early final is not prepared (None: prepare it). ``accepted``: the turn is the
    person's (not a candidate heard while the device spoke); ``remote``: Home Assistant's
    pipeline answers the turns; ``text``: the early final's, once known; ``held``: its words
    read mid-thought and the text hold keeps the pause open."""
    if not allowed:
        return "provider"
    if not listening or not accepted:
        return "not_listening"
    if remote:
        return "remote"
    if text is None:
        return None
    if not normalise(text):
        return "no_words"
    if control_of(text) is not None:
        return "control"  # "start over", "stop": the device answers itself, never the agent
    if held:
        # "set a timer for": the turn cannot end for hold_silence_ms and the person most
        # likely goes on, so a request now would almost always be closed unread
        return "mid_thought"
    return None


def send_delay_s(*, now_s: float, earliest_end_s: float | None, lead_s: float | None,
                 margin_s: float) -> float:
    """How long a prepared request waits before it goes out: until ``lead_s`` (the agent's,
    from a reply's start to its first audio) plus ``margin_s`` before the pause can end the
    turn (``earliest_end_s``). Either unknown: at once (0)."""
    if earliest_end_s is None or lead_s is None:
        return 0.0
    return max(0.0, earliest_end_s - margin_s - lead_s - now_s)


class AgentLead:
    """How long the agent takes from a reply's start to its first audio: the longest of the
    last ``keep`` replies (an agent's pace varies, and a reply late at the turn's end costs
    more than a request closed unread). None until a reply has shown it."""

    def __init__(self, keep: int = 8) -> None:
        self._leads: deque[float] = deque(maxlen=keep)

    def add(self, lead_s: float) -> None:
        if lead_s >= 0.0:
            self._leads.append(lead_s)

    def clear(self) -> None:
        self._leads.clear()

    def estimate(self) -> float | None:
        return max(self._leads) if self._leads else None


def lead_of(timeline: TurnTimeline) -> float | None:
    """A finished turn's lead: from its reply's start (the prepared request's, when it was
    used; else the final transcript) to its first audio. None when the agent made no audio
    or the turn never asked it."""
    marks = timeline.marks
    used = timeline.extra.get("speculation") == USED
    start = marks.get(Mark.SPECULATED if used else Mark.ASR_FINAL)
    end = marks.get(Mark.FIRST_AUDIO)
    if start is None or end is None or Mark.REQUEST_SENT not in marks:
        return None
    return end - start


def commit_refusal(*, same_turn: bool, early_text: str | None, final_text: str, prepared: bool,
                   failed: bool) -> Drop | None:
    """Why the prepared reply is not the turn's reply (None: release it)."""
    if not same_turn:
        return Drop.NOT_SENT
    if early_text is None or not prepared:
        return Drop.NOT_READY
    if normalise(early_text) != normalise(final_text):
        return Drop.DIFFERENT
    if failed:
        return Drop.FAILED
    return None


def on_tool_call(*, committed: bool, saw_text: bool) -> Drop | None:
    """A tool call in a prepared reply: run it (committed), hold it until the commit (text
    came first: None), or drop the attempt (the reply starts with it)."""
    if committed or saw_text:
        return None
    return Drop.TOOL_CALL


# --- carrying them out ------------------------------------------------------------------------

class _HeldTimeline(TurnTimeline):
    """The attempt's marks and figures, kept apart until release, then the turn's."""

    target: TurnTimeline | None = None

    def mark(self, mark: Mark, at_s: float) -> None:
        if self.target is not None:
            self.target.mark(mark, at_s)
        else:
            super().mark(mark, at_s)

    def release(self, target: TurnTimeline) -> None:
        for mark, at_s in self.marks.items():
            target.mark(mark, at_s)
        target.extra.update(self.extra)
        self.extra = target.extra
        self.target = target


class _HeldBus(EventBus):
    """The attempt's events (``reply.requested``), published only at release."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Event] = []
        self.target: EventBus | None = None

    def publish(self, event: Event) -> None:
        if self.target is not None:
            self.target.publish(event)
        else:
            self.held.append(event)

    def release(self, target: EventBus) -> None:
        self.target = target
        for event in self.held:
            target.emit(event.type, **event.data)  # stamped now: when it became the turn's
        self.held = []


@dataclass(eq=False)
class _Attempt:
    turn: Turn
    timeline: _HeldTimeline
    bus: _HeldBus = field(default_factory=_HeldBus)
    text: str | None = None  # the early final's, once known
    agent: AgentClient | None = None
    held: HeldReply | None = None
    task: asyncio.Task[None] | None = None
    committed: asyncio.Event = field(default_factory=asyncio.Event)


class Speculator:
    """Prepares the reply to an early final and hands it to the turn that ends with the same
    words (module docstring). Lives on the event loop, beside the conversation it serves."""

    def __init__(self, conversation: Conversation) -> None:
        self._conversation = conversation
        self._attempt: _Attempt | None = None
        self._dropping: set[asyncio.Task[None]] = set()
        self.lead = AgentLead()
        self._lead_agent: AgentClient | None = None  # whose replies ``lead`` measured

    def learn(self, turn: Turn) -> None:
        """A turn's reply is over: how long its agent took to its first audio (the reports call
        this for every turn; only the agent's own replies say anything)."""
        agent = self._conversation.agent
        if agent is not self._lead_agent:  # a new agent (a reload): its pace is not known
            self.lead.clear()
            self._lead_agent = agent
        lead = None if turn.remote else lead_of(turn.timeline)
        if lead is not None:
            self.lead.add(lead)

    def heard(self, event: object) -> bool:
        """Take the hearing events that are speculation's (never published): True if taken."""
        if isinstance(event, EarlyTranscript):
            self.drop(Drop.REPLACED)
            self._early(event)
            return True
        if isinstance(event, SpeechResumed):
            self.drop(Drop.RESUMED)
            return True
        return False

    def _early(self, event: EarlyTranscript) -> None:
        c = self._conversation
        turn = c._turn
        if turn is None or start_refusal(
                allowed=speculates(c.settings.speculate, c.agent.provider),
                listening=c.state is State.LISTENING, accepted=turn.accepted,
                remote=c._remote_active()) is not None:
            return
        attempt = _Attempt(turn, _HeldTimeline(turn.timeline.turn_id))
        attempt.task = asyncio.create_task(self._prepare(attempt, event),
                                           name=f"speculate-{turn.timeline.turn_id}")
        self._attempt = attempt

    async def _prepare(self, attempt: _Attempt, event: EarlyTranscript) -> None:
        c = self._conversation
        try:
            result: AsrResult = await asyncio.to_thread(event.result)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the real turn's final will say what went wrong
            _LOGGER.debug("no early transcript to speculate on: %s", err)
            return
        if self._attempt is attempt:  # where the time before the request goes (metrics.turn)
            marks = attempt.turn.timeline.marks
            marks[Mark.EARLY_FINAL], marks[Mark.EARLY_TEXT] = event.t, c.clock.now()
        held = event.text_hold and reading_of(result).mid_thought

        def refused() -> bool:
            return self._attempt is not attempt or start_refusal(
                allowed=True, listening=c.state is State.LISTENING, accepted=attempt.turn.accepted,
                remote=c._remote_active(), text=result.text, held=held) is not None

        if refused():
            return
        lead = self.lead.estimate() if c.agent is self._lead_agent else None
        now = c.clock.now()
        delay = send_delay_s(now_s=now, earliest_end_s=event.earliest_end_s, lead_s=lead,
                             margin_s=c.settings.speculate_margin_ms / 1000.0)
        if delay > 0.0:  # speech coming back meanwhile cancels this task: nothing is sent
            _LOGGER.debug("speculative request waits %.0f ms", 1000 * delay)
            await c.clock.sleep_until(now + delay)
            if refused():
                return
        attempt.text = result.text
        attempt.agent = c.agent
        user = UserTurn(text=result.text, low_confidence=result.low_confidence)
        deltas = sources.from_agent(c.agent, user, attempt.timeline, bus=attempt.bus, clock=c.clock,
                                    knowledge=c.knowledge)
        token = TOOL_GATE.set(partial(self._tool_gate, attempt))
        try:  # the reading and synthesis tasks copy this context: the gate holds in them
            attempt.held = c.replies.prepare(deltas, attempt.turn.timeline.turn_id)
        finally:
            TOOL_GATE.reset(token)
        attempt.turn.timeline.marks[Mark.SPECULATED] = c.clock.now()  # the attempt in force
        extra = attempt.turn.timeline.extra
        count = extra.get("speculations", 0)
        extra["speculations"] = (count if isinstance(count, int) else 0) + 1
        _LOGGER.debug("speculating on %r", result.text)

    async def _tool_gate(self, attempt: _Attempt) -> None:
        held = attempt.held
        drop = on_tool_call(committed=attempt.committed.is_set(), saw_text=held is not None and held.saw_text)
        if drop is not None and self._attempt is attempt:
            self._attempt = None
            self._drop(attempt, drop)  # cancels this very wait
        await attempt.committed.wait()

    def take(self, turn: Turn, final: FinalTranscript,
             otherwise: AsyncIterator[str]) -> AsyncIterable[str]:
        """The reply for ``turn``, whose final is ``final``: the prepared one when it holds,
        else ``otherwise`` (the request as without speculation, sent once a dropped attempt's
        request is closed, so the agent's history never sees it)."""
        attempt, self._attempt = self._attempt, None
        if attempt is None:
            return self._after_drops(otherwise) if self._dropping else otherwise
        held = attempt.held
        refusal = commit_refusal(same_turn=attempt.turn is turn, early_text=attempt.text,
                                 final_text=final.text, prepared=held is not None,
                                 failed=held is not None and held.failed)
        if refusal is not None or held is None:
            self._drop(attempt, refusal or Drop.NOT_READY)
            return self._after_drops(otherwise)
        attempt.committed.set()
        turn.timeline.extra["speculation"] = USED
        held.on_release = partial(self._released, attempt)
        _LOGGER.debug("speculation used for %s", turn.timeline.turn_id)
        return held

    def _released(self, attempt: _Attempt) -> None:
        attempt.timeline.release(attempt.turn.timeline)
        attempt.bus.release(self._conversation.bus)

    def state_changed(self, state: State) -> None:
        """Out of listening, an attempt not taken is the turn's no more (it went elsewhere,
        or nowhere: mute, reset, an announcement, the turn discarded)."""
        if state is not State.LISTENING:
            self.drop(Drop.NOT_SENT)

    def drop(self, reason: Drop) -> None:
        """Drop the attempt in flight, if any (nothing of it was played)."""
        attempt, self._attempt = self._attempt, None
        if attempt is not None:
            self._drop(attempt, reason)

    def _drop(self, attempt: _Attempt, reason: Drop) -> None:
        if attempt.held is not None:  # a request went out: the turn's metrics say why it was dropped
            extra = attempt.turn.timeline.extra
            extra["speculation"] = DROPPED
            drops = extra.setdefault("speculation_drops", [])
            if isinstance(drops, list):
                drops.append(str(reason))
            _LOGGER.debug("speculation dropped (%s)", reason)
        task = asyncio.create_task(self._discard(attempt), name="speculation-drop")
        self._dropping.add(task)
        task.add_done_callback(self._dropping.discard)

    async def _discard(self, attempt: _Attempt) -> None:
        if attempt.task is not None:
            attempt.task.cancel()
            await asyncio.wait([attempt.task])
        if attempt.held is not None:
            await attempt.held.discard()
        if attempt.agent is not None and attempt.text is not None:
            attempt.agent.forget_reply(attempt.text)

    async def _after_drops(self, deltas: AsyncIterator[str]) -> AsyncIterator[str]:
        while self._dropping:
            await asyncio.wait(set(self._dropping))
        async for delta in deltas:
            yield delta

    async def close(self) -> None:
        self.drop(Drop.NOT_SENT)
        while self._dropping:
            await asyncio.wait(set(self._dropping))
