"""provider = "operator": a person answers each turn from the console's /operator page.

The visitor's words go to every connected operator (:class:`OperatorDesk`); the first
answer is streamed as the reply, word by word, like any agent's. "Say nothing" is an
empty answer: nothing is spoken and the device listens again. With nobody connected, or
no answer within ``[operator] timeout_s``, ``[operator] fallback`` answers: another
provider, or a phrase. What the visitor heard (all of it, or up to a barge-in) goes back
to the operators.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable

from edgevoice.device.agents.base import AgentClient, UserTurn
from edgevoice.device.agents.local import words
from edgevoice.device.config.schema import LlmConfig, OperatorConfig
from edgevoice.device.console.desk import NoOperator, OperatorDesk

_LOGGER = logging.getLogger(__name__)

# [operator] fallback values that name a provider rather than a phrase.
FALLBACK_PROVIDERS = ("agent", "openai", "ollama", "homeassistant", "local")


class OperatorAgentClient(AgentClient):
    provider = "operator"

    def __init__(
        self,
        config: OperatorConfig,
        llm: LlmConfig,
        desk: OperatorDesk | None,
        fallback_agent: Callable[[str], AgentClient],
    ) -> None:
        super().__init__(history_turns=llm.history_turns, max_reply_chars=llm.max_reply_chars)
        self._config = config
        self._desk = desk
        self._build_fallback = fallback_agent
        self._fallback: AgentClient | None = None
        self._answered_turn: str | None = None
        if desk is None:
            _LOGGER.warning("provider operator without [console] enabled: nobody can answer, "
                            "every turn gets the [operator] fallback")

    async def _stream(self, turn: UserTurn) -> AsyncGenerator[str, None]:
        self._answered_turn = None
        try:
            text = await self._ask(turn)
        except NoOperator as why:
            _LOGGER.info("operator: %s; the fallback answers", why)
            async for delta in self._fallback_reply(turn):
                yield delta
            return
        for word in words(text):
            yield word

    async def _ask(self, turn: UserTurn) -> str:
        desk = self._desk
        if desk is None:
            raise NoOperator("the console is off")
        pending = desk.open_turn(turn.text, low_confidence=turn.low_confidence,
                                 timeout_s=self._config.timeout_s)
        try:
            async with asyncio.timeout(self._config.timeout_s):
                text = await asyncio.shield(pending.answer)
        except TimeoutError:
            desk.close_turn(pending, "timeout")
            raise NoOperator(f"no operator answered within {self._config.timeout_s:g} s") from None
        except asyncio.CancelledError:
            desk.close_turn(pending, "cancelled")
            raise
        self._answered_turn = pending.turn_id
        return text

    async def _fallback_reply(self, turn: UserTurn) -> AsyncGenerator[str, None]:
        fallback = self._config.fallback.strip()
        if fallback in FALLBACK_PROVIDERS:
            if self._fallback is None:
                self._fallback = self._build_fallback(fallback)
            async for delta in self._fallback.reply(turn):
                yield delta
            return
        for word in words(fallback):
            yield word

    def record_reply(self, *, heard_text: str, interrupted: bool) -> None:
        super().record_reply(heard_text=heard_text, interrupted=interrupted)
        if self._fallback is not None:
            self._fallback.record_reply(heard_text=heard_text, interrupted=interrupted)
        if self._desk is not None and self._answered_turn is not None:
            self._desk.heard(self._answered_turn, heard_text, interrupted)

    def _on_reset(self) -> None:
        if self._fallback is not None:
            self._fallback.reset_session()

    async def aclose(self) -> None:
        if self._fallback is not None:
            await self._fallback.aclose()
