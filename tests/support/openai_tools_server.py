"""An OpenAI-compatible ``/v1/chat/completions`` server on loopback that calls tools.

It streams as the OpenAI API does (``text/event-stream``, ``chat.completion.chunk``
objects, ``data: [DONE]``). When the last message is the person's, ``plan`` says which
tools to call: each call goes out as ``tool_calls`` deltas in pieces, the way real servers
cut them — the id, type and first half of the name in one chunk, the rest of the name in
the next, the arguments in three pieces; several calls are interleaved by ``index`` — and
the stream ends with ``finish_reason: "tool_calls"``. When the last message is a tool
result, it streams that result's ``say`` word by word, so what the device speaks is what
its tool answered. Every request body is kept, verbatim, in ``bodies``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from support.agent_server import serve

# the person's words -> the calls to make: (tool name, arguments)
Plan = Callable[[str], list[tuple[str, dict[str, Any]]]]


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    data = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": "test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(data)}\n\n".encode()


def call_pieces(index: int, call_id: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """One tool call as the ``tool_calls`` delta entries a streaming server sends."""
    encoded = json.dumps(arguments)
    third = max(1, len(encoded) // 3)
    half = max(1, len(name) // 2)
    return [
        {"index": index, "id": call_id, "type": "function",
         "function": {"name": name[:half], "arguments": ""}},
        {"index": index, "function": {"name": name[half:]}},
        *({"index": index, "function": {"arguments": piece}}
          for piece in (encoded[:third], encoded[third:2 * third], encoded[2 * third:])),
    ]


@dataclass
class ToolCallingModel:
    plan: Plan
    preamble: str = ""  # streamed word by word before the tool calls ("Let me check.")
    bad_index: Any = None  # when set, every tool_calls entry carries this index instead
    bodies: list[dict[str, Any]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def tool_results(self, n: int) -> list[dict[str, Any]]:
        """The ``role: tool`` messages of request ``n``, their content parsed."""
        return [{**m, "content": json.loads(m["content"])}
                for m in self.bodies[n]["messages"] if m.get("role") == "tool"]

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        last = body["messages"][-1]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(chunk({"role": "assistant", "content": ""}))
        if last["role"] == "user":
            for word in re.findall(r"\S+\s*", self.preamble):
                await response.write(chunk({"content": word}))
            calls = [call_pieces(i, f"call_{next(self._ids)}", name, args)
                     for i, (name, args) in enumerate(self.plan(str(last["content"])))]
            if self.bad_index is not None:
                calls = [[{**piece, "index": self.bad_index} for piece in pieces] for pieces in calls]
            # interleaved: call 0's first piece, call 1's first piece, ...
            for pieces in itertools.zip_longest(*calls):
                for piece in pieces:
                    if piece is not None:
                        await response.write(chunk({"tool_calls": [piece]}))
            finish = "tool_calls" if calls else "stop"
            if not calls:
                await response.write(chunk({"content": "I have no tool for that."}))
        else:
            said = " ".join(json.loads(m["content"]).get("say", "")
                            for m in body["messages"] if m["role"] == "tool"
                            and m["tool_call_id"] in _ids_of_last_round(body["messages"]))
            for word in re.findall(r"\S+\s*", said):
                await response.write(chunk({"content": word}))
            finish = "stop"
        await response.write(chunk({}, finish))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _ids_of_last_round(messages: list[dict[str, Any]]) -> set[str]:
    asked = next(m for m in reversed(messages) if m["role"] == "assistant" and m.get("tool_calls"))
    return {c["id"] for c in asked["tool_calls"]}


@asynccontextmanager
async def tool_calling_server(plan: Plan, **options: Any) -> AsyncIterator[tuple[str, ToolCallingModel]]:
    """The server on 127.0.0.1; yields its ``base_url`` (``.../v1``) and the model
    (``options``: its ``preamble``, ``bad_index``)."""
    model = ToolCallingModel(plan, **options)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", model.completions)
    async with serve(app) as url:
        yield url + "/v1", model
