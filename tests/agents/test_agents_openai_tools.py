"""OpenAI-compatible models get the device's ``timer`` tool, and it runs for real.

A loopback server that streams as ``/v1/chat/completions`` does answers the person's turn
with a ``timer`` tool call cut into pieces (id, name halves, arguments in three), then
speaks the result the device sent back. On the whole device the timer then exists in its
:class:`TimerService`, and the tool result is exactly what the service answered; "how long
is left" and "cancel the timer" go the same way. Against the client alone: two calls
interleaved in one stream, and a call the service refuses (told to the model, nothing set).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from support.device_harness import PHRASES, running_device, voice
from support.openai_tools_server import tool_calling_server

from edgevoice.device.agents import RecordingActions, UserTurn, build_agent
from edgevoice.device.agents.errors import AgentBadReplyError
from edgevoice.device.config.loader import build_config
from edgevoice.device.events import EventType
from edgevoice.device.timers.service import TimerService

TIMER_PHRASES = ("set a timer for five minutes", "how long is left", "cancel the timer")
GRAMMAR = "asr.grammar=[" + ", ".join(f'"{p}"' for p in (*PHRASES, *TIMER_PHRASES)) + "]"
CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "set a timer for five minutes": [("timer", {"action": "set", "seconds": 300})],
    "how long is left": [("timer", {"action": "left"})],
    "cancel the timer": [("timer", {"action": "cancel"})],
}


def plan(text: str) -> list[tuple[str, dict[str, Any]]]:
    return CALLS.get(text, [])


async def test_the_timer_tool_sets_reads_and_cancels_the_device_s_timer(tmp_path: Path) -> None:
    for phrase in TIMER_PHRASES:
        voice(phrase)  # before the room runs: at speed 0 its clock races on meanwhile
    async with tool_calling_server(plan) as (base_url, model):
        overrides = ["llm.provider=openai", f"openai.base_url={base_url}", "openai.model=test", GRAMMAR]
        async with running_device(tmp_path, overrides) as device:
            service = device.daemon.timers
            assert isinstance(service, TimerService)
            answered: list[dict[str, Any]] = []
            handle = service.handle

            async def recorded(action: str, name: str | None = None,
                               seconds: float | None = None) -> dict[str, Any]:
                result = await handle(action, name, seconds)
                answered.append(result)
                return result

            service.handle = recorded  # type: ignore[method-assign]  # the real one, watched

            async def turn(text: str) -> str:
                device.say(text, after_s=0.5)
                heard = await device.wait_for(EventType.TRANSCRIPT_USER)
                assert heard.data["text"] == text
                done = await device.wait_for(EventType.REPLY_DONE)
                assert done.data["status"] == "completed", done.data
                after = device.events[device.events.index(heard):]
                return " ".join(e.data["text"] for e in after if e.type == EventType.TRANSCRIPT_AGENT)

            spoken = await turn("set a timer for five minutes")
            timers = service.snapshot()["timers"]
            assert [(t["name"], t["duration_s"]) for t in timers] == [("timer", 300.0)]
            assert 295 < timers[0]["remaining_s"] <= 300
            # the first request offered the timer tool; the second carried its call and result
            offered = {t["function"]["name"]: t["function"] for t in model.bodies[0]["tools"]}
            assert offered["timer"]["parameters"]["properties"]["action"]["enum"] == ["set", "left", "cancel"]
            assert len(model.bodies) == 2
            asked = model.bodies[1]["messages"][-2]
            assert asked["role"] == "assistant" and asked["tool_calls"] == [
                {"id": "call_0", "type": "function",
                 "function": {"name": "timer", "arguments": '{"action": "set", "seconds": 300}'}}]
            [result] = model.tool_results(1)
            assert result["tool_call_id"] == "call_0"
            assert result["content"] == answered[-1]
            assert result["content"]["say"] == "A timer for 5 minutes, starting now." == spoken
            assert result["content"]["timers"][0]["ends_at"] == timers[0]["ends_at"]

            spoken = await turn("how long is left")
            [result] = model.tool_results(3)
            assert result["tool_call_id"] == "call_1" and result["content"] == answered[-1]
            assert spoken == result["content"]["say"]
            left = re.fullmatch(r"The timer has (.+) left\.", spoken)
            assert left, spoken
            left_s = sum(int(n) * {"minute": 60, "second": 1}[unit]
                         for n, unit in re.findall(r"(\d+) (minute|second)s?", left.group(1)))
            # what is left is rounded up to whole seconds; a few seconds passed since "set"
            remaining = result["content"]["timers"][0]["remaining_s"]
            assert 290 < remaining <= left_s <= remaining + 1 <= 301, (spoken, remaining)
            assert [t["name"] for t in service.snapshot()["timers"]] == ["timer"]  # reading changes nothing

            spoken = await turn("cancel the timer")
            [result] = model.tool_results(5)
            assert result["content"] == answered[-1] == {"say": "Cancelled the timer.", "timers": []}
            assert spoken == "Cancelled the timer."
            assert service.snapshot()["timers"] == [] and service.book.timers == ()
            # each turn: one request asking, one carrying the result; the service ran once a turn
            assert len(model.bodies) == 6 and len(answered) == 3
            assert all(body["tools"] == model.bodies[0]["tools"] for body in model.bodies)


class ServiceActions(RecordingActions):
    """The device side of the timer tool, handed to a real :class:`TimerService`."""

    def __init__(self, service: TimerService) -> None:
        super().__init__()
        self.service = service

    async def timers_action(self, action: str, name: str | None = None,
                            seconds: float | None = None) -> dict[str, Any]:
        return await self.service.handle(action, name, seconds)


async def timer_client_reply(tmp_path: Path, plan: Any, text: str,
                             **options: Any) -> tuple[str, TimerService, Any]:
    service = TimerService(tmp_path, ring=lambda: None, on_ringing=lambda _on: None,
                           emit=lambda *_a, **_k: None)
    async with tool_calling_server(plan, **options) as (base_url, model):
        config = build_config([("t", {"llm": {"provider": "openai"},
                                      "openai": {"base_url": base_url, "model": "test"}})])
        client = build_agent(config, ServiceActions(service))
        try:
            reply = "".join([d async for d in client.reply(UserTurn(text))])
        finally:
            await client.aclose()
    return reply, service, model


async def test_two_timer_calls_interleaved_in_one_stream_both_run(tmp_path: Path) -> None:
    def two(_text: str) -> list[tuple[str, dict[str, Any]]]:
        return [("timer", {"action": "set", "seconds": 600, "name": "pasta"}),
                ("timer", {"action": "set", "seconds": 150, "name": "tea"})]

    reply, service, model = await timer_client_reply(tmp_path, two, "a pasta and a tea timer")
    assert {t.name: t.duration_s for t in service.book.timers} == {"pasta": 600.0, "tea": 150.0}
    asked = model.bodies[1]["messages"][-3]
    assert [(c["id"], c["function"]["name"]) for c in asked["tool_calls"]] == [("call_0", "timer"),
                                                                                 ("call_1", "timer")]
    results = model.tool_results(1)
    assert [r["tool_call_id"] for r in results] == ["call_0", "call_1"]
    assert [r["content"]["say"] for r in results] == [
        "A pasta timer for 10 minutes, starting now.",
        "A tea timer for 2 minutes and 30 seconds, starting now.",
    ]
    assert reply == " ".join(r["content"]["say"] for r in results)


async def test_a_call_the_timer_service_refuses_is_told_to_the_model(tmp_path: Path) -> None:
    def no_duration(_text: str) -> list[tuple[str, dict[str, Any]]]:
        return [("timer", {"action": "set"})]

    _reply, service, model = await timer_client_reply(tmp_path, no_duration, "set a timer")
    [result] = model.tool_results(1)
    assert result["content"] == {"error": "set needs a duration"}
    assert service.book.timers == ()


async def test_what_the_model_said_before_its_call_is_spoken_and_sent_back_with_the_call(
        tmp_path: Path) -> None:
    def one(_text: str) -> list[tuple[str, dict[str, Any]]]:
        return [("timer", {"action": "set", "seconds": 300})]

    reply, _service, model = await timer_client_reply(tmp_path, one, "set a timer for five minutes",
                                                      preamble="Sure, one moment. ")
    assert reply == "Sure, one moment. A timer for 5 minutes, starting now."
    # The next round's history has it, so the model does not say it again.
    asked = model.bodies[1]["messages"][-2]
    assert asked["role"] == "assistant" and asked["tool_calls"]
    assert asked["content"] == "Sure, one moment. "


async def test_a_call_with_no_text_before_it_sends_no_content(tmp_path: Path) -> None:
    def one(_text: str) -> list[tuple[str, dict[str, Any]]]:
        return [("timer", {"action": "left"})]

    _reply, _service, model = await timer_client_reply(tmp_path, one, "how long is left")
    assert model.bodies[1]["messages"][-2]["content"] is None


async def test_a_tool_call_index_that_is_not_an_integer_is_a_bad_reply_that_says_so(
        tmp_path: Path) -> None:
    def one(_text: str) -> list[tuple[str, dict[str, Any]]]:
        return [("timer", {"action": "set", "seconds": 60})]

    with pytest.raises(AgentBadReplyError, match="index is 'first', not an integer"):
        await timer_client_reply(tmp_path, one, "set a timer", bad_index="first")
