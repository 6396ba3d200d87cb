"""The local agent, the pure stream parsers and the tools, without any server."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from edgevoice.device.agents import RecordingActions, UserTurn, build_agent
from edgevoice.device.agents.local import Intent, LocalAgentClient, classify, words
from edgevoice.device.agents.streams import LineBuffer, SseParser
from edgevoice.device.agents.tools import DeviceTools, ToolCall, is_affirmative
from edgevoice.device.config.loader import build_config
from edgevoice.device.config.schema import Config, GpioOutputConfig

FIXED = datetime(2026, 3, 4, 9, 30, tzinfo=UTC)


def local_config() -> Config:
    return build_config([("t", {"llm": {"provider": "local"}, "local": {"word_delay_ms": 0}})])


async def say(client: LocalAgentClient, text: str) -> list[str]:
    deltas = [d async for d in client.reply(UserTurn(text))]
    client.record_reply(heard_text="".join(deltas), interrupted=False)
    return deltas


@pytest.mark.parametrize(("text", "intent"), [
    ("Hello there", Intent.GREET), ("What time is it?", Intent.TIME), ("what's the date today", Intent.DATE),
    ("Stop.", Intent.STOP), ("let's start over", Intent.START_OVER), ("Tell me a story", Intent.STORY),
    ("repeat after me: the cat sat", Intent.REPEAT_AFTER), ("what did I say", Intent.REPEAT_LAST),
    ("who are you", Intent.NAME), ("purple elephants", Intent.ECHO), ("", Intent.UNSURE),
])
def test_classify(text: str, intent: Intent) -> None:
    assert classify(text)[0] is intent


async def test_local_agent_answers_deterministically() -> None:
    actions = RecordingActions()
    client = build_agent(local_config(), actions, now=lambda: FIXED)
    assert isinstance(client, LocalAgentClient)
    assert "".join(await say(client, "what time is it")) == "It is 09:30."
    assert "".join(await say(client, "what day is it")) == "Today is Wednesday, 4 March 2026."
    assert "".join(await say(client, "Repeat after me: Hello, world!")) == "Hello, world!"
    assert "".join(await say(client, "what did I say")) == "You said: Repeat after me: Hello, world!"
    story = await say(client, "tell me a story")
    assert len(story) > 50 and all(len(w.split()) == 1 for w in story)  # word-sized deltas
    assert "".join(await say(client, "start over")).startswith("Okay, let's start over.")
    assert actions.restarted and not actions.ended
    assert "".join(await say(client, "goodbye")) == "Okay, goodbye." and actions.ended


async def test_local_start_over_without_actions_resets_itself() -> None:
    client = build_agent(local_config(), None)
    first = client.session_id
    _ = [d async for d in client.reply(UserTurn("start over"))]
    assert client.session_id != first and client.history == []


def test_words_join_back() -> None:
    text = "One  two,\tthree.\nFour"
    assert "".join(words(text)) == text


def test_line_buffer_any_chunking() -> None:
    data = "data: é1\r\ndata: 2\rdata: 3\n\n".encode()
    whole = LineBuffer().feed(data)
    buf = LineBuffer()
    pieces = [line for i in range(len(data)) for line in buf.feed(data[i:i + 1])] + buf.flush()
    assert whole == pieces == ["data: é1", "data: 2", "data: 3", ""]


def test_sse_parser() -> None:
    parser = SseParser()
    events = [parser.feed_line(line) for line in
              [": ping", "event: x", "data: a", "data:b", "junk", "", "id: 3", ""]]
    assert [e for e in events if e] and events[5] is not None
    assert (events[5].data, events[5].event) == ("a\nb", "x")
    assert parser.heartbeats == 1 and parser.garbage == 1 and events[7] is None


async def test_gpio_tool_confirmation_and_modes() -> None:
    actions = RecordingActions()
    door = GpioOutputConfig(name="open_door", pin=17, description="Door", confirm=True)
    lamp = GpioOutputConfig(name="lamp", pin=22, mode="switch")
    tools = DeviceTools(("current_time",), (door, lamp), actions, now=lambda: FIXED)
    asked = json.loads(await tools.run(ToolCall("1", "open_door", '{"confirmed": true}'), "open the door"))
    assert asked["done"] is False and actions.calls == []
    done = json.loads(await tools.run(ToolCall("2", "open_door", '{"confirmed": true}'), "yes, do it"))
    assert done == {"done": True, "output": "open_door", "on": False}
    lit = json.loads(await tools.run(ToolCall("3", "lamp", '{"on": true}'), "lamp on"))
    assert lit["on"] is True and actions.outputs["lamp"] is True
    bad = json.loads(await tools.run(ToolCall("4", "lamp", "{not json"), "x"))
    assert "invalid arguments" in bad["error"]
    assert is_affirmative("yes please") and not is_affirmative("no, don't")


def test_device_tools_need_actions() -> None:
    tools = DeviceTools(("current_time", "set_volume"), (GpioOutputConfig(name="x", pin=1),), None)
    assert [t["function"]["name"] for t in tools.schemas()] == ["current_time"]
