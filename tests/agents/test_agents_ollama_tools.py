"""Ollama gets the device tools (the timer among them): a server on loopback that speaks
Ollama's /api/chat tool protocol asks for the timer tool, gets its result back as a
``role: tool`` message and then answers; a model without tools is used without them."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from support.agent_server import serve

from edgevoice.device.agents import RecordingActions, UserTurn, build_agent
from edgevoice.device.config.loader import build_config


class TimerActions(RecordingActions):
    async def timers_action(self, action: str, name: str | None = None,
                            seconds: float | None = None) -> dict[str, Any]:
        self.calls.append(("timers_action", (action, name, seconds)))
        return {"say": "A pasta timer for 5 minutes, starting now.", "timers": []}


def ndjson(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


async def test_ollama_runs_the_timer_tool_and_answers_with_its_result() -> None:
    bodies: list[dict[str, Any]] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        bodies.append(body)
        if body["messages"][-1]["role"] == "user":
            reply = ndjson({"message": {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "timer", "arguments": {"action": "set", "seconds": 300,
                                                             "name": "pasta"}}}]}, "done": False},
                {"message": {"role": "assistant", "content": ""}, "done": True})
        else:
            said = json.loads(body["messages"][-1]["content"])["say"]
            reply = ndjson({"message": {"role": "assistant", "content": said}, "done": False},
                           {"message": {"role": "assistant", "content": ""}, "done": True})
        return web.Response(body=reply, content_type="application/x-ndjson")

    app = web.Application()
    app.router.add_post("/api/chat", chat)
    async with serve(app) as url:
        config = build_config([("t", {"llm": {"provider": "ollama"},
                                      "ollama": {"base_url": url, "model": "qwen3"}})])
        actions = TimerActions()
        client = build_agent(config, actions)
        try:
            text = "".join([d async for d in client.reply(UserTurn("set a pasta timer for five minutes"))])
        finally:
            await client.aclose()
    assert text == "A pasta timer for 5 minutes, starting now."
    assert actions.calls == [("timers_action", ("set", "pasta", 300.0))]
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == [
        "current_time", "set_volume", "end_conversation", "timer"]
    assert bodies[1]["messages"][-1]["role"] == "tool" and bodies[1]["messages"][-1]["tool_name"] == "timer"
    assert bodies[1]["messages"][-2]["tool_calls"][0]["function"]["name"] == "timer"


async def test_a_model_without_tools_is_used_without_them() -> None:
    bodies: list[dict[str, Any]] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        bodies.append(body)
        if "tools" in body:
            return web.json_response({"error": "registry.ollama.ai/library/gemma:2b does not support tools"},
                                     status=400)
        return web.Response(body=ndjson({"message": {"content": "Hello."}, "done": True}),
                            content_type="application/x-ndjson")

    app = web.Application()
    app.router.add_post("/api/chat", chat)
    async with serve(app) as url:
        config = build_config([("t", {"llm": {"provider": "ollama"},
                                      "ollama": {"base_url": url, "model": "gemma:2b"}})])
        client = build_agent(config, TimerActions())
        try:
            first = "".join([d async for d in client.reply(UserTurn("hello"))])
            second = "".join([d async for d in client.reply(UserTurn("hello again"))])
        finally:
            await client.aclose()
    assert first == second == "Hello."
    assert ["tools" in b for b in bodies] == [True, False, False]
