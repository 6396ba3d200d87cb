"""The operator desk and the ``operator`` provider: first answer wins, "say nothing" is an
empty reply, the fallback answers when nobody is there or nobody answers in time."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from edgevoice.device.agents import build_agent
from edgevoice.device.agents.base import UserTurn
from edgevoice.device.config import load_config
from edgevoice.device.console.desk import NoOperator, OperatorDesk


class Operator:
    """What one operator's socket would receive."""

    def __init__(self, desk: OperatorDesk) -> None:
        self.messages: list[dict[str, Any]] = []
        self.asked = asyncio.Event()
        self.id = desk.connect(self.receive)

    def receive(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if message["type"] == "operator.turn":
            self.asked.set()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["type"] == kind]


def _agent(desk: OperatorDesk | None, *overrides: str) -> Any:
    config = load_config(None, ("llm.provider=operator", "local.word_delay_ms=0", *overrides)).config
    return build_agent(config, operator_desk=desk)


async def _reply(agent: Any, text: str) -> str:
    return "".join([d async for d in agent.reply(UserTurn(text))])


async def _answer_when_asked(desk: OperatorDesk, operator: Operator, text: str) -> dict[str, Any]:
    await asyncio.wait_for(operator.asked.wait(), 5)
    assert desk.pending is not None
    return desk.answer(operator.id, desk.pending.turn_id, text)


async def test_the_first_answer_wins_and_the_others_see_it_was_taken() -> None:
    desk = OperatorDesk(("Please come in.",))
    first, second = Operator(desk), Operator(desk)
    assert first.of("operator.hello")[0]["quick_replies"] == ["Please come in."]
    agent = _agent(desk)
    reply = asyncio.create_task(_reply(agent, "is anybody there"))
    won = await _answer_when_asked(desk, second, "Yes, one moment please.")
    assert won == {"ok": True, "turn_id": "op-1"}
    late = desk.answer(first.id, "op-1", "Hello?")
    assert late["ok"] is False and late["error"]["code"] == "already_answered"
    assert await reply == "Yes, one moment please."
    for operator in (first, second):
        asked = operator.of("operator.turn")
        assert [m["text"] for m in asked] == ["is anybody there"]
        taken = operator.of("operator.taken")
        assert taken == [{"type": "operator.taken", "turn_id": "op-1", "by": second.id,
                          "text": "Yes, one moment please.", "say_nothing": False}]
    agent.record_reply(heard_text="Yes, one", interrupted=True)
    assert first.of("operator.heard") == [{"type": "operator.heard", "turn_id": "op-1",
                                           "heard_text": "Yes, one", "interrupted": True}]
    assert agent.history[-1].assistant == "Yes, one" and agent.history[-1].interrupted


async def test_say_nothing_is_an_empty_reply() -> None:
    desk = OperatorDesk()
    operator = Operator(desk)
    agent = _agent(desk)
    reply = asyncio.create_task(_reply(agent, "hello"))
    assert (await _answer_when_asked(desk, operator, ""))["ok"]
    assert await reply == ""
    assert operator.of("operator.taken")[0]["say_nothing"] is True


async def test_no_operator_connected_gets_the_fallback_phrase_at_once() -> None:
    agent = _agent(OperatorDesk(), "operator.fallback=Nobody is here right now.")
    assert await asyncio.wait_for(_reply(agent, "hello"), 2) == "Nobody is here right now."


async def test_the_fallback_can_be_another_provider() -> None:
    agent = _agent(OperatorDesk(), "operator.fallback=local")
    text = await asyncio.wait_for(_reply(agent, "say good morning"), 5)
    assert text == "good morning"  # the local agent's repeat-after-me


async def test_nobody_answering_in_time_gets_the_fallback_and_closes_the_turn() -> None:
    desk = OperatorDesk()
    operator = Operator(desk)
    agent = _agent(desk, "operator.timeout_s=1", "operator.fallback=Please try again later.")
    assert await asyncio.wait_for(_reply(agent, "hello"), 5) == "Please try again later."
    assert operator.of("operator.closed") == [{"type": "operator.closed", "turn_id": "op-1",
                                               "reason": "timeout"}]
    late = desk.answer(operator.id, "op-1", "Sorry, I was away")
    assert late["error"]["code"] == "no_such_turn"


async def test_the_last_operator_leaving_hands_the_turn_to_the_fallback() -> None:
    desk = OperatorDesk()
    operator = Operator(desk)
    agent = _agent(desk, "operator.fallback=Nobody is here.")
    reply = asyncio.create_task(_reply(agent, "hello"))
    await asyncio.wait_for(operator.asked.wait(), 5)
    desk.disconnect(operator.id)
    assert await asyncio.wait_for(reply, 2) == "Nobody is here."


async def test_a_barge_in_cancelling_the_wait_closes_the_turn_for_the_operators() -> None:
    desk = OperatorDesk()
    operator = Operator(desk)
    agent = _agent(desk)
    reply = asyncio.create_task(_reply(agent, "hello"))
    await asyncio.wait_for(operator.asked.wait(), 5)
    reply.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reply
    assert operator.of("operator.closed")[-1]["reason"] == "cancelled"
    assert desk.pending is None


def test_an_empty_desk_refuses_to_open_a_turn() -> None:
    async def run() -> None:
        with pytest.raises(NoOperator):
            OperatorDesk().open_turn("hi", low_confidence=False, timeout_s=1)

    asyncio.run(run())


def test_the_config_checks_the_operator_section() -> None:
    from edgevoice.device.config import ConfigError

    with pytest.raises(ConfigError) as err:
        load_config(None, ("operator.timeout_s=0",))
    assert "operator.timeout_s" in str(err.value)
    config = load_config(None, ("llm.provider=operator",)).config
    assert config.console.enabled is False and config.console.listen == "127.0.0.1:8080"
    assert dataclasses.is_dataclass(config.operator)
