"""An HTTP agent on loopback that streams like an LLM: a time to first token, then one
word every ``ms_per_word``, in the shapes the device reads.

Endpoints (aiohttp; every reply is paced the same way):

- ``POST /agent`` — edgevoice's agent contract (docs/agents.md, ``[llm] provider =
  "agent"``): ``text/event-stream`` (``data: {"delta": "..."}`` per word, ``data: [DONE]``)
  or ``text/plain`` (the words as they come), per the server's ``shape`` or per request
  with ``?shape=sse|text``. A ``"oneshot"`` request (the rolling summary) gets one short
  unpaced answer.
- ``POST /v1/chat/completions`` — the OpenAI chunk stream (``provider = "openai"``,
  ``stream: true``): a role-only first chunk, one ``choices[0].delta.content`` chunk per
  word, a ``finish_reason: "stop"`` chunk, ``data: [DONE]``. A request without
  ``stream: true`` gets 400 (the device always streams).
- ``POST /script`` ``{"replies": [...]}`` — replies to give next, in order (a chat turn
  with none queued gets ``default_reply``, which ``{"default_reply": "..."}`` sets: a device
  that speculates may send a turn twice); ``GET /log`` — every chat request as served.

What an LLM does that this copies: tokens are words with their leading whitespace
(``"Sure"``, ``" the"``, ``"\\n- Milk"``), so a sentence end only becomes certain when the
next word's space arrives; markdown (``**bold**``, ``- `` bullets, ``#`` headings) when
``markdown`` is on, the same text without it when off.

    python tests/support/llm_paced_agent.py --port 9000 --ms-per-word 20 --ttft-ms 0 [--shape text]

Tests and benchmarks start it with :func:`paced_agent` (this loop) or as a process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web

SHAPES = ("sse", "text")


@dataclass(frozen=True, slots=True)
class Pacing:
    """How the agent streams."""

    ttft_ms: float = 0.0  # request in → first word written
    ms_per_word: float = 20.0  # between consecutive words
    markdown: bool = True  # False: the same replies with markdown removed
    shape: str = "sse"  # /agent's reply shape unless the request asks: sse | text


@dataclass(slots=True)
class Served:
    """One chat request as served (times are time.monotonic() on the server)."""

    path: str
    shape: str
    text: str  # the reply streamed
    body: dict[str, Any]
    arrived: float
    first_write: float | None = None
    last_write: float | None = None
    words: int = 0


@dataclass(slots=True)
class PacedState:
    pacing: Pacing
    default_reply: str = "Okay."
    queue: deque[str] = field(default_factory=deque)
    log: list[Served] = field(default_factory=list)


STATE: web.AppKey[PacedState] = web.AppKey("paced_state", PacedState)

_MARKUP = (
    (re.compile(r"\*\*(.+?)\*\*"), r"\1"),
    (re.compile(r"(?<!\w)\*(\S.*?)\*"), r"\1"),
    (re.compile(r"^#{1,6}\s+", re.M), ""),
    (re.compile(r"^\s*[-*]\s+", re.M), ""),
    (re.compile(r"`([^`]*)`"), r"\1"),
)


def plain(text: str) -> str:
    """``text`` without its markdown, as an LLM told not to use any would write it."""
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text


def tokens(text: str) -> list[str]:
    """The reply as an LLM streams it: each word with the whitespace before it."""
    return re.findall(r"\s*\S+", text)


async def paced_words(text: str, pacing: Pacing, arrived: float) -> AsyncIterator[str]:
    """The words of ``text`` at their due times, counted from ``arrived`` (no drift)."""
    for index, word in enumerate(tokens(text)):
        due = arrived + (pacing.ttft_ms + index * pacing.ms_per_word) / 1000.0
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        yield word


def _next_reply(state: PacedState) -> str:
    text = state.queue.popleft() if state.queue else state.default_reply
    return text if state.pacing.markdown else plain(text)


async def _stream(request: web.Request, served: Served, content_type: str, frame: Any, *,
                  head: bytes = b"", tail: bytes = b"") -> web.StreamResponse:
    state = request.app[STATE]
    response = web.StreamResponse(headers={"Content-Type": content_type, "Cache-Control": "no-cache"})
    await response.prepare(request)
    if head:
        await response.write(head)
    async for word in paced_words(served.text, state.pacing, served.arrived):
        await response.write(frame(word))
        served.last_write = time.monotonic()
        if served.first_write is None:
            served.first_write = served.last_write
        served.words += 1
    if tail:
        await response.write(tail)
    await response.write_eof()
    return response


def _sse_delta(word: str) -> bytes:
    return f"data: {json.dumps({'delta': word})}\n\n".encode()


async def agent(request: web.Request) -> web.StreamResponse:
    arrived = time.monotonic()
    state = request.app[STATE]
    body = await request.json()
    if body.get("type") == "oneshot":
        return web.json_response({"text": "The person asked a few questions."})
    shape = request.query.get("shape", state.pacing.shape)
    if shape not in SHAPES:
        raise web.HTTPBadRequest(text=f"shape must be one of {SHAPES}")
    served = Served("/agent", shape, _next_reply(state), body, arrived)
    state.log.append(served)
    if shape == "sse":
        return await _stream(request, served, "text/event-stream", _sse_delta, tail=b"data: [DONE]\n\n")
    return await _stream(request, served, "text/plain; charset=utf-8", lambda w: w.encode())


def _chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    data = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(data)}\n\n".encode()


async def chat_completions(request: web.Request) -> web.StreamResponse:
    arrived = time.monotonic()
    state = request.app[STATE]
    body = await request.json()
    if body.get("stream") is not True:
        raise web.HTTPBadRequest(text="this server only streams: send stream: true")
    served = Served("/v1/chat/completions", "openai", _next_reply(state), body, arrived)
    state.log.append(served)
    cid, model = f"chatcmpl-{uuid.uuid4().hex[:12]}", str(body.get("model", "paced"))
    return await _stream(
        request, served, "text/event-stream", lambda w: _chunk(cid, model, {"content": w}),
        head=_chunk(cid, model, {"role": "assistant", "content": ""}),
        tail=_chunk(cid, model, {}, "stop") + b"data: [DONE]\n\n",
    )


async def script(request: web.Request) -> web.Response:
    body = await request.json()
    state = request.app[STATE]
    replies = body.get("replies")
    if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
        raise web.HTTPBadRequest(text='send {"replies": ["...", ...]}')
    state.queue.extend(replies)
    if isinstance(body.get("default_reply"), str):  # what every request gets while none is queued
        state.default_reply = body["default_reply"]
    if "pacing" in body:  # change the pacing between runs: {"ms_per_word": 50, ...}
        state.pacing = replace(state.pacing, **body["pacing"])
    return web.json_response({"queued": len(state.queue)})


async def log(request: web.Request) -> web.Response:
    return web.json_response([
        {"path": s.path, "shape": s.shape, "text": s.text, "arrived": s.arrived, "first_write": s.first_write,
         "last_write": s.last_write, "words": s.words} for s in request.app[STATE].log
    ])


def make_app(pacing: Pacing | None = None, *, default_reply: str = "Okay.") -> web.Application:
    app = web.Application()
    app[STATE] = PacedState(pacing or Pacing(), default_reply)
    app.router.add_post("/agent", agent)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/script", script)
    app.router.add_get("/log", log)
    return app


@asynccontextmanager
async def paced_agent(pacing: Pacing | None = None, **options: Any) -> AsyncIterator[tuple[str, PacedState]]:
    """The paced agent in this loop on an ephemeral loopback port: yields (base URL, state)."""
    app = make_app(pacing, **options)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}", app[STATE]
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--ttft-ms", type=float, default=0.0)
    parser.add_argument("--ms-per-word", type=float, default=20.0)
    parser.add_argument("--no-markdown", action="store_true")
    parser.add_argument("--shape", choices=SHAPES, default="sse")
    args = parser.parse_args()
    pacing = Pacing(args.ttft_ms, args.ms_per_word, not args.no_markdown, args.shape)
    web.run_app(make_app(pacing), host="127.0.0.1", port=args.port, print=None,
                handler_cancellation=True, shutdown_timeout=0.1)


if __name__ == "__main__":
    main()
