"""The interface the conversation runtime calls, and the history every provider shares.

::

    client = build_agent(config, actions)
    async for delta in client.reply(UserTurn("what time is it")):
        ...                                   # streamed text, in order
    client.record_reply(heard_text="It is ten", interrupted=True)

Cancelling the task that iterates :meth:`AgentClient.reply` closes the HTTP connection at
once (barge-in). A failed turn raises an :class:`~edgevoice.device.agents.errors.AgentError`
after yielding whatever text had arrived. What the person *heard* (``record_reply``) is what
becomes history, so an interrupted reply is remembered as far as it was spoken.
"""

from __future__ import annotations

import abc
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

from edgevoice.device.agents.errors import AgentReplyTooLargeError
from edgevoice.device.knowledge.retrieval import Retrieval

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class UserTurn:
    """What the person said in one turn. ``text`` is sent exactly as heard.

    ``knowledge`` is what the device's knowledge base found for it (``None`` when
    knowledge is off or the provider does not take it); only its passages that cleared
    ``[knowledge] min_score`` reach an agent."""

    text: str
    low_confidence: bool = False
    knowledge: Retrieval | None = None

    @property
    def context(self) -> list[str]:
        """The matched chunks as the agent contract's ``context`` strings ([] when none)."""
        return self.knowledge.context() if self.knowledge is not None else []


@dataclass(frozen=True, slots=True)
class Exchange:
    """One finished exchange: the person's text and what they heard of the reply."""

    user: str
    assistant: str
    interrupted: bool = False


def new_session_id() -> str:
    return uuid.uuid4().hex


class AgentClient(abc.ABC):
    """One conversation with one agent. Not safe for two concurrent ``reply()`` calls."""

    provider: str = ""
    # Whether turns should be looked up in the knowledge base for this provider.
    uses_knowledge: bool = True

    def __init__(self, *, history_turns: int = 20, max_reply_chars: int = 4000) -> None:
        self._session_id = new_session_id()
        self._history_turns = history_turns
        self._max_reply_chars = max_reply_chars
        self.history: list[Exchange] = []
        self._pending_user: str | None = None
        self._pending_reply: list[str] = []
        self._interrupted_text: str | None = None

    # --- the session --------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """Stable for the conversation; a new one after :meth:`reset_session`."""
        return self._session_id

    def reset_session(self) -> None:
        """Start over: a new session id; history, summary and per-session state dropped."""
        self._session_id = new_session_id()
        self.history.clear()
        self._pending_user = None
        self._pending_reply = []
        self._interrupted_text = None
        self._on_reset()
        _LOGGER.info("%s agent: new session %s", self.provider, self._session_id)

    def _on_reset(self) -> None:
        """Providers drop their own per-session state here."""
        return None

    def take_session(self, other: AgentClient) -> None:
        """Carry on ``other``'s conversation (a client rebuilt for new settings on reload):
        its session id, history and what is pending of its last turn. Providers carry
        their own per-session state where they can (the agent's rolling summary)."""
        self._session_id = other._session_id
        self.history = list(other.history)
        self._pending_user = other._pending_user
        self._pending_reply = list(other._pending_reply)
        self._interrupted_text = other._interrupted_text

    # --- one turn -----------------------------------------------------------------

    async def reply(self, turn: UserTurn) -> AsyncIterator[str]:
        """Stream the agent's reply to ``turn`` as text deltas.

        Raises an ``AgentError`` (after yielding what arrived) when the turn fails.
        """
        self._settle_pending()
        self._pending_user = turn.text
        self._pending_reply = []
        budget = self._max_reply_chars
        async with aclosing(self._stream(turn)) as stream:
            async for delta in stream:
                if not delta:
                    continue
                if len(delta) > budget:
                    kept = delta[:budget]
                    if kept:
                        self._pending_reply.append(kept)
                        yield kept
                    _LOGGER.warning(
                        "%s agent: reply passed %d characters; the rest is dropped",
                        self.provider, self._max_reply_chars,
                    )
                    raise AgentReplyTooLargeError(
                        f"the agent's reply passed {self._max_reply_chars} characters and was cut "
                        "there; make the agent answer shorter or raise [llm] max_reply_chars"
                    )
                budget -= len(delta)
                self._pending_reply.append(delta)
                yield delta

    def record_reply(self, *, heard_text: str, interrupted: bool) -> None:
        """Tell the client what the person heard of the last reply.

        ``interrupted`` is true when they barged in; the next request then carries
        ``interrupted_text`` (agent contract) and the history holds only what was heard.
        """
        if self._pending_user is None:
            _LOGGER.debug("record_reply without a pending turn; ignored")
            return
        self._finish(Exchange(self._pending_user, heard_text, interrupted))

    def forget_reply(self, text: str) -> None:
        """Undo the request for ``text`` whose reply nobody heard (one prepared ahead of its
        turn and dropped: device/runtime/speculation.py): it leaves no history."""
        if self._pending_user == text:
            self._pending_user = None
            self._pending_reply = []

    def _settle_pending(self) -> None:
        # A turn the runtime never recorded: assume the whole generated reply was heard.
        if self._pending_user is not None:
            self._finish(Exchange(self._pending_user, "".join(self._pending_reply), False))

    def _finish(self, exchange: Exchange) -> None:
        self._pending_user = None
        self._pending_reply = []
        self._interrupted_text = exchange.assistant if exchange.interrupted else None
        self.history.append(exchange)
        self._on_exchange(exchange)

    def _on_exchange(self, exchange: Exchange) -> None:
        """Providers react to a finished exchange here (e.g. the rolling summary)."""
        return None

    def recent_history(self) -> list[Exchange]:
        if self._history_turns <= 0:
            return []
        return self.history[-self._history_turns :]

    @abc.abstractmethod
    def _stream(self, turn: UserTurn) -> AsyncGenerator[str, None]:
        """The provider's own request: yield reply text deltas."""

    async def aclose(self) -> None:
        """Release connections and background work."""
        return None
