"""Each provider's happy path against the example agent server on loopback."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from support.agent_server import example_server

from edgevoice.device.agents import AgentClient, RecordingActions, UserTurn, build_agent
from edgevoice.device.config.loader import build_config
from edgevoice.device.config.schema import Config

FIXED = datetime(2026, 3, 4, 9, 30, tzinfo=UTC)


def make_config(**sections: Any) -> Config:
    return build_config([("test", sections)])


async def collect(client: AgentClient, text: str, low: bool = False) -> tuple[str, list[str]]:
    deltas = [d async for d in client.reply(UserTurn(text, low_confidence=low))]
    return "".join(deltas), deltas


@pytest.mark.parametrize("shape", ["sse", "text", "json"])
async def test_agent_contract_each_reply_shape(shape: str) -> None:
    async with example_server(shape=shape) as server:
        client = build_agent(make_config(llm={"provider": "agent"}, agent={"url": server.url + "/agent"}))
        try:
            text, deltas = await collect(client, "tell me a long story")
        finally:
            await client.aclose()
    assert text.startswith("Here is a long answer.") and text.endswith("And this is the end.")
    # Streamed shapes arrive in pieces; JSON is one buffered piece.
    assert (len(deltas) == 1) == (shape == "json")


async def test_agent_contract_fields_exactly() -> None:
    async with example_server() as server:
        cfg = make_config(
            llm={"provider": "agent"},
            agent={"url": server.url + "/agent", "api_key": "k1", "skill": "Be brief."},
            device={"resource_id": "alice"},
        )
        client = build_agent(cfg)
        try:
            await collect(client, "my name is Alice")
            first_session = client.session_id
            # Barge-in on the second reply: what was heard goes back as interrupted_text.
            await collect(client, "what is my name", low=True)
            client.record_reply(heard_text="Your name", interrupted=True)
            await collect(client, "sorry, go on")
            client.reset_session()
            await collect(client, "what is my name")
        finally:
            await client.aclose()
        bodies = server.state.bodies()
        headers = [r.headers for r in server.state.requests]
    assert bodies[0] == {"session_id": first_session, "resource_id": "alice", "type": "chat",
                         "text": "my name is Alice", "system": "Be brief."}
    assert bodies[1]["system"].startswith("Be brief.\n\nThe speech recogniser was unsure")
    assert "interrupted_text" not in bodies[1]
    assert bodies[2]["interrupted_text"] == "Your name"
    assert bodies[2]["session_id"] == first_session
    assert bodies[3]["session_id"] != first_session and "interrupted_text" not in bodies[3]
    assert all("context" not in b and "summary" not in b for b in bodies)
    assert all(h["Authorization"] == "Bearer k1" for h in headers)
    # Memory per resource_id survives the reset on the server side.
    assert server.state.sessions[bodies[3]["session_id"]][0][1] == "Your name is Alice."


async def test_agent_without_identity_omits_resource_id_and_auth() -> None:
    async with example_server() as server:
        client = build_agent(make_config(llm={"provider": "agent", "system_prompt": "ignored here"},
                                         agent={"url": server.url + "/agent"}))
        try:
            await collect(client, "hello")
        finally:
            await client.aclose()
        (body,) = server.state.bodies()
        (request,) = server.state.requests
    assert set(body) == {"session_id", "type", "text"}
    assert "Authorization" not in request.headers


async def test_agent_rolling_summary_is_a_oneshot_then_sent() -> None:
    async with example_server() as server:
        client = build_agent(make_config(llm={"provider": "agent", "summary_after_turns": 2},
                                         agent={"url": server.url + "/agent"}))
        try:
            for text in ("first thing", "second thing"):
                await collect(client, text)
                client.record_reply(heard_text="ok", interrupted=False)
            await client.wait_background()  # type: ignore[attr-defined]
            await collect(client, "third thing")
        finally:
            await client.aclose()
        bodies = server.state.bodies()
    oneshot = [b for b in bodies if b["type"] == "oneshot"]
    assert len(oneshot) == 1
    assert "Person: first thing" in oneshot[0]["text"] and oneshot[0]["system"].startswith("Summarise")
    assert bodies[-1]["type"] == "chat"
    assert bodies[-1]["summary"] == "The person said: first thing; second thing."


async def test_openai_streams_and_keeps_heard_history() -> None:
    async with example_server() as server:
        cfg = make_config(llm={"provider": "openai", "system_prompt": "Be nice.", "tools": []},
                          openai={"base_url": server.url + "/v1", "model": "m-1", "api_key": "sk",
                                  "reasoning_effort": "low", "temperature": 0.2})
        client = build_agent(cfg)
        try:
            text, deltas = await collect(client, "tell me a long story")
            client.record_reply(heard_text="Here is a long answer.", interrupted=True)
            await collect(client, "hello")
        finally:
            await client.aclose()
        bodies = server.state.bodies("/v1/chat/completions")
    assert text.startswith("Here is a long answer.") and len(deltas) > 5
    assert bodies[0]["stream"] is True and bodies[0]["model"] == "m-1"
    assert bodies[0]["reasoning_effort"] == "low" and bodies[0]["temperature"] == 0.2
    assert "tools" not in bodies[0] and "max_tokens" not in bodies[0]
    assert bodies[1]["messages"] == [
        {"role": "system", "content": "Be nice."},
        {"role": "user", "content": "tell me a long story"},
        {"role": "assistant", "content": "Here is a long answer."},
        {"role": "user", "content": "hello"},
    ]


async def test_openai_tool_calls_run_on_the_device() -> None:
    actions = RecordingActions()
    async with example_server() as server:
        cfg = make_config(
            llm={"provider": "openai",
                 "gpio_outputs": [{"name": "open_door", "pin": 17, "description": "Door relay",
                                   "confirm": True}]},
            openai={"base_url": server.url + "/v1"},
        )
        client = build_agent(cfg, actions, now=lambda: FIXED)
        try:
            time_text, _ = await collect(client, "what time is it")
            volume_text, _ = await collect(client, "set the volume to 30")
            ask_text, _ = await collect(client, "open the door")
            done_text, _ = await collect(client, "yes open the door")
        finally:
            await client.aclose()
        bodies = server.state.bodies("/v1/chat/completions")
    assert time_text == "It is Wednesday 04 March 2026, 09:30."
    assert volume_text == "Volume set to 30 percent." and actions.volume == pytest.approx(0.3)
    assert ask_text == "Are you sure? Please say yes to confirm."
    assert actions.outputs == {"open_door": False} and ("gpio_output", ("open_door", None)) in actions.calls
    assert done_text.startswith("Done:")
    names = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert names == ["current_time", "set_volume", "end_conversation", "timer", "open_door"]
    follow_up = bodies[1]["messages"]
    assert follow_up[-2]["role"] == "assistant" and follow_up[-2]["tool_calls"][0]["function"] == {
        "name": "current_time", "arguments": "{}"}
    call_id = follow_up[-2]["tool_calls"][0]["id"]
    assert follow_up[-1]["role"] == "tool" and follow_up[-1]["tool_call_id"] == call_id


async def test_ollama_ndjson_with_options() -> None:
    async with example_server() as server:
        cfg = make_config(llm={"provider": "ollama", "system_prompt": ""},
                          ollama={"base_url": server.url, "model": "qwen", "keep_alive": "10m",
                                  "temperature": 0.5, "num_ctx": 2048})
        client = build_agent(cfg)
        try:
            text, deltas = await collect(client, "tell me a long story")
            client.record_reply(heard_text=text, interrupted=False)
            await collect(client, "again")
        finally:
            await client.aclose()
        bodies = server.state.bodies("/api/chat")
    assert text.endswith("And this is the end.") and len(deltas) > 5
    assert bodies[0]["keep_alive"] == "10m" and bodies[0]["options"] == {"temperature": 0.5, "num_ctx": 2048}
    assert bodies[0]["stream"] is True and bodies[0]["model"] == "qwen"
    assert [m["role"] for m in bodies[1]["messages"]] == ["user", "assistant", "user"]


async def test_homeassistant_keeps_conversation_id_per_session() -> None:
    async with example_server(api_key="tok") as server:
        cfg = make_config(llm={"provider": "homeassistant"}, device={"language": "de"},
                          homeassistant={"url": server.url, "token": "tok", "agent_id": "conversation.x"})
        client = build_agent(cfg)
        try:
            first, _ = await collect(client, "hello there")
            await collect(client, "and again")
            client.reset_session()
            await collect(client, "after reset")
        finally:
            await client.aclose()
        bodies = server.state.bodies("/api/conversation/process")
    assert first == "You said: hello there."
    assert bodies[0] == {"text": "hello there", "language": "de", "agent_id": "conversation.x"}
    assert bodies[1]["conversation_id"] and "conversation_id" not in bodies[2]


async def test_barge_in_closes_the_connection() -> None:
    async with example_server(word_delay_s=0.05) as server:
        client = build_agent(make_config(llm={"provider": "agent"}, agent={"url": server.url + "/agent"}))
        got: list[str] = []
        speaking = asyncio.Event()

        async def consume() -> None:
            async for delta in client.reply(UserTurn("tell me a long story")):
                got.append(delta)
                if len(got) == 2:
                    speaking.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(speaking.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        seen = await server.state.wait_for_disconnect(2.0)
        await client.aclose()
    assert seen["session_id"] == client.session_id
    assert server.state.completed == 0


@pytest.mark.parametrize("shape", ["sse", "text"])
async def test_speak_first_sentence_arrives_before_the_slow_work(shape: str) -> None:
    from edgevoice.device.speaking.sentences import SentenceSplitter

    async with example_server(shape=shape, slow_work_s=0.6, heartbeat_s=0.1) as server:
        client = build_agent(make_config(llm={"provider": "agent"}, agent={"url": server.url + "/agent"}))
        splitter = SentenceSplitter()
        loop = asyncio.get_running_loop()
        started = loop.time()
        first_sentence_at = None
        try:
            async for delta in client.reply(UserTurn("what's the weather")):
                if first_sentence_at is None and splitter.feed(delta):
                    first_sentence_at = loop.time() - started
        finally:
            await client.aclose()
        total = loop.time() - started
    assert first_sentence_at is not None and first_sentence_at < 0.3
    assert total >= 0.6
