"""Where a reply's words come from, for the conversation's reply task.

- The agent: the turn goes out with what the knowledge base found for it, and the turn's
  timeline marks the lookup, the request and each delta's arrival.
- A conversation control ("start over", "stop"): the device acts on its own session and
  confirms in a few words, never asking the agent.

Each is an async iterator of text deltas, as the reply speaker takes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable

from edgevoice.device.agents import AgentClient, UserTurn
from edgevoice.device.events import EventBus, EventType
from edgevoice.device.knowledge import KnowledgeBase
from edgevoice.device.runtime.controls import CONFIRMATION, Control
from edgevoice.device.runtime.metrics import Mark, TurnTimeline
from edgevoice.device.runtime.tasks import AudioClock


async def from_agent(agent: AgentClient, user: UserTurn, timeline: TurnTimeline, *, bus: EventBus,
                     clock: AudioClock, knowledge: KnowledgeBase | None) -> AsyncIterator[str]:
    """The agent's reply to ``user``, the knowledge base's passages attached when it uses them."""
    if knowledge is not None and agent.uses_knowledge:
        found = knowledge.lookup(user.text)
        timeline.mark(Mark.RETRIEVED, clock.now())
        timeline.extra["retrieval_ms"] = round(found.elapsed_ms, 3)
        timeline.extra["knowledge_matched"] = len(found.passages)
        user = dataclasses.replace(user, knowledge=found)
    timeline.mark(Mark.REQUEST_SENT, clock.now())
    bus.emit(EventType.REPLY_REQUESTED, utterance_id=timeline.turn_id,
             session_id=agent.session_id, provider=agent.provider)
    async for delta in agent.reply(user):
        timeline.mark(Mark.FIRST_TEXT, clock.now())
        yield delta


async def from_control(control: Control, agent: AgentClient, *, bus: EventBus, silent: bool,
                       on_stop: Callable[[], None]) -> AsyncIterator[str]:
    """"Start over" and "stop": a new session with the agent (and for "stop", ``on_stop``:
    no follow-up window); a short confirmation unless the words interrupted a reply."""
    agent.reset_session()
    bus.emit(EventType.SESSION_RESET, session_id=agent.session_id, reason=f"voice_{control}")
    if control is Control.STOP:
        on_stop()
    if not silent:
        yield CONFIRMATION[control]
