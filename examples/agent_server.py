#!/usr/bin/env python3
"""An example agent server for edgevoice: both contracts, in one small aiohttp app.

Run it:  python examples/agent_server.py --port 9000 [--shape sse|text|json]
then point a device at it:
    [llm] provider = "agent"    [agent] url = "http://HOST:9000/agent"
or  [llm] provider = "openai"   [openai] base_url = "http://HOST:9000/v1"

What it shows:
- ``POST /agent``: the HTTP agent contract. The reply shape (application/json,
  text/plain streamed, text/event-stream) is the server's ``--shape``, or per request
  ``?shape=`` or the ``X-Reply-Shape`` header. Memory per ``session_id`` (what was said)
  and per ``resource_id`` (the person's name, across sessions). ``type: "oneshot"``
  requests (the device's rolling summary) get a stateless answer.
- The speak-first pattern: for slow questions ("weather", "look up", "think") a few words
  go out at once, the slow work runs behind them, and SSE comments keep the stream alive
  while waiting.
- Cancellation: when the device barges in it closes the connection; the server notices,
  stops working on the reply and records it (``state.disconnects``).
- ``POST /v1/chat/completions``: OpenAI-compatible SSE chunks, including a streamed tool
  call (``current_time``, ``set_volume``, ``end_conversation``, declared GPIO tools) and the
  follow-up that uses the tool result.
- ``POST /api/chat`` (Ollama NDJSON) and ``POST /api/conversation/process`` (Home
  Assistant) so every networked provider can be tried against one process.

Tests import :func:`make_app` and read ``app[STATE]`` (every request received, verbatim).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

_LOGGER = logging.getLogger("agent_server")

SHAPES = ("sse", "text", "json")
_WORD = re.compile(r"\S+\s*")


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    at: float  # time.perf_counter() when the body had been read
    first_write_at: float | None = None  # when the first reply bytes were handed to the socket


@dataclass
class ServerState:
    """What the server received and remembers; tests assert on it."""

    requests: list[RecordedRequest] = field(default_factory=list)
    disconnects: list[dict[str, Any]] = field(default_factory=list)
    sessions: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    resources: dict[str, dict[str, str]] = field(default_factory=dict)
    completed: int = 0

    def bodies(self, path: str = "/agent") -> list[Any]:
        return [r.body for r in self.requests if r.path == path]

    async def wait_for_disconnect(self, within_s: float = 2.0) -> dict[str, Any]:
        end = time.monotonic() + within_s
        while not self.disconnects:
            if time.monotonic() > end:
                raise TimeoutError("the server saw no client disconnect")
            await asyncio.sleep(0.01)
        return self.disconnects[-1]


STATE: web.AppKey[ServerState] = web.AppKey("state", ServerState)


@dataclass(frozen=True)
class Options:
    shape: str = "sse"
    word_delay_s: float = 0.0
    slow_work_s: float = 1.0
    heartbeat_s: float = 0.25
    api_key: str = ""


OPTIONS: web.AppKey[Options] = web.AppKey("options", Options)
RECORD: web.RequestKey[RecordedRequest] = web.RequestKey("record", RecordedRequest)


# --- the "brain": deterministic answers ------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    first: str  # spoken at once
    rest: str = ""  # after the slow work, if any
    slow: bool = False


def think(state: ServerState, body: dict[str, Any]) -> Answer:
    text = str(body.get("text", ""))
    lower = text.lower()
    session = state.sessions.setdefault(str(body.get("session_id", "")), [])
    resource_id = str(body.get("resource_id", ""))
    person = state.resources.setdefault(resource_id, {}) if resource_id else {}
    name_said = re.search(r"\bmy name is (\w+)", lower)
    if name_said:
        name = name_said.group(1).capitalize()
        person["name"] = name
        answer = Answer(f"Nice to meet you, {name}.")
    elif "my name" in lower:
        name = person.get("name", "")
        answer = Answer(f"Your name is {name}." if name else "I don't know your name yet.")
    elif "how many" in lower and "said" in lower:
        answer = Answer(f"You have said {len(session)} things in this conversation so far.")
    elif "summary" in lower:
        answer = Answer(f"My summary so far: {body.get('summary') or 'none yet'}.")
    elif any(word in lower for word in ("weather", "look up", "think")):
        # Speak first: a few words at once, ended by a space so the device knows the
        # sentence is complete and can speak it while the slow work runs.
        answer = Answer("Let me check that for you. ", "It is sunny and twenty one degrees.", slow=True)
    elif "story" in lower or "long" in lower:
        answer = Answer(
            "Here is a long answer. It has several sentences, so you can interrupt it. "
            "The second sentence is here. The third sentence follows the second. "
            "The fourth sentence is almost the last one. And this is the end."
        )
    else:
        answer = Answer(f"You said: {text}.")
    session.append((text, answer.first + answer.rest))
    return answer


def summarise(text: str) -> str:
    said = [line[len("Person: "):] for line in text.splitlines() if line.startswith("Person: ")]
    return "The person said: " + "; ".join(said) + "." if said else "Nothing was said."


# --- helpers --------------------------------------------------------------------------------


async def _record(request: web.Request) -> Any:
    raw = await request.read()
    try:
        body: Any = json.loads(raw) if raw else None
    except json.JSONDecodeError:
        body = raw.decode("utf-8", errors="replace")
    record = RecordedRequest(request.path, dict(request.headers), body, time.perf_counter())
    request.app[STATE].requests.append(record)
    request[RECORD] = record
    return body


def _mark_first_write(request: web.Request) -> None:
    record = request.get(RECORD)
    if record is not None and record.first_write_at is None:
        record.first_write_at = time.perf_counter()


def _authorised(request: web.Request) -> bool:
    key = request.app[OPTIONS].api_key
    return not key or request.headers.get("Authorization") == f"Bearer {key}"


async def _watch_disconnect(
    request: web.Request, session_id: str, work: Callable[[], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Run a streaming reply; a client that goes away is noticed and recorded."""
    try:
        return await work()
    except (ConnectionResetError, asyncio.CancelledError) as err:
        request.app[STATE].disconnects.append(
            {"path": request.path, "session_id": session_id, "at": time.monotonic()}
        )
        _LOGGER.info("client went away mid-reply (session %s); reply abandoned", session_id)
        if isinstance(err, asyncio.CancelledError):
            raise
        return web.Response(status=499)


async def _words(text: str, delay: float) -> Any:
    for index, word in enumerate(_WORD.findall(text)):
        if index and delay:
            await asyncio.sleep(delay)
        yield word


async def _slow_work(response: web.StreamResponse | None, options: Options, *, sse: bool) -> None:
    """The slow part, with a heartbeat while it runs (SSE comments keep the stream alive)."""
    end = asyncio.get_running_loop().time() + options.slow_work_s
    while (left := end - asyncio.get_running_loop().time()) > 0:
        await asyncio.sleep(min(options.heartbeat_s, left))
        if sse and response is not None:
            await response.write(b": keep-alive\n\n")


# --- the HTTP agent contract ------------------------------------------------------------------


async def agent(request: web.Request) -> web.StreamResponse:
    body = await _record(request)
    if not _authorised(request):
        return web.json_response({"error": "bad api key"}, status=401)
    if not isinstance(body, dict) or not isinstance(body.get("text"), str):
        return web.json_response({"error": "expected a JSON object with text"}, status=400)
    state, options = request.app[STATE], request.app[OPTIONS]
    if body.get("type") == "oneshot":
        return web.json_response({"text": summarise(body["text"])})
    shape = request.query.get("shape") or request.headers.get("X-Reply-Shape") or options.shape
    answer = think(state, body)
    session_id = str(body.get("session_id", ""))

    async def stream() -> web.StreamResponse:
        if shape == "json":
            if answer.slow:
                await asyncio.sleep(options.slow_work_s)
            _mark_first_write(request)
            return web.json_response({"text": answer.first + answer.rest})
        sse = shape == "sse"
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream" if sse else "text/plain; charset=utf-8",
                     "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        for part, slow_before in ((answer.first, False), (answer.rest, answer.slow)):
            if slow_before:
                await _slow_work(response, options, sse=sse)
            async for word in _words(part, options.word_delay_s):
                payload = f"data: {json.dumps({'delta': word})}\n\n" if sse else word
                _mark_first_write(request)
                await response.write(payload.encode())
        if sse:
            await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        state.completed += 1
        return response

    return await _watch_disconnect(request, session_id, stream)


# --- OpenAI-compatible /v1/chat/completions -------------------------------------------------


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [t.get("function", {}).get("name", "") for t in body.get("tools") or []]


def _plan_tool_call(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return None
    text = str(messages[-1].get("content", "")).lower()
    names = _tool_names(body)
    if "time" in text and "current_time" in names:
        return "current_time", {}
    if "volume" in text and "set_volume" in names:
        digits = re.search(r"\d+", text)
        return "set_volume", {"level": int(digits.group()) if digits else 50}
    if ("goodbye" in text or "bye" in text) and "end_conversation" in names:
        return "end_conversation", {}
    for name in names:
        if name and all(word in text for word in name.split("_")):
            return name, ({"confirmed": True} if "yes" in text else {})
    return None


def _after_tools(messages: list[dict[str, Any]]) -> str:
    results = [json.loads(m.get("content") or "{}") for m in messages if m.get("role") == "tool"]
    last = results[-1] if results else {}
    if "spoken" in last:
        return f"It is {last['spoken']}."
    if "volume_percent" in last:
        return f"Volume set to {last['volume_percent']} percent."
    if last.get("needs_confirmation"):
        return "Are you sure? Please say yes to confirm."
    if "ok" in last:
        return "Goodbye!"
    return f"Done: {json.dumps(last)}."


def _chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    data = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(data)}\n\n".encode()


async def chat_completions(request: web.Request) -> web.StreamResponse:
    body = await _record(request)
    if not _authorised(request):
        return web.json_response({"error": {"message": "bad api key", "type": "auth"}}, status=401)
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return web.json_response({"error": {"message": "messages required"}}, status=400)
    options = request.app[OPTIONS]
    messages = body["messages"]
    model = str(body.get("model", ""))
    cid = "chatcmpl-" + uuid.uuid4().hex[:12]
    call = _plan_tool_call(body)
    if messages and messages[-1].get("role") == "tool":
        text = _after_tools(messages)
    else:
        user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        text = think(request.app[STATE], {"text": user.get("content", ""), "session_id": cid}).first
    if not body.get("stream"):
        return web.json_response({"id": cid, "object": "chat.completion", "model": model, "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})

    async def stream() -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        _mark_first_write(request)
        await response.write(_chunk(cid, model, {"role": "assistant", "content": ""}))
        if call is not None:
            name, args = call
            await response.write(_chunk(cid, model, {"tool_calls": [
                {"index": 0, "id": "call_" + uuid.uuid4().hex[:8], "type": "function",
                 "function": {"name": name, "arguments": ""}}]}))
            encoded = json.dumps(args)
            for piece in (encoded[: len(encoded) // 2], encoded[len(encoded) // 2 :]):
                await response.write(_chunk(cid, model, {"tool_calls": [
                    {"index": 0, "function": {"arguments": piece}}]}))
            await response.write(_chunk(cid, model, {}, "tool_calls"))
        else:
            async for word in _words(text, options.word_delay_s):
                await response.write(_chunk(cid, model, {"content": word}))
            await response.write(_chunk(cid, model, {}, "stop"))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        request.app[STATE].completed += 1
        return response

    return await _watch_disconnect(request, cid, stream)


# --- Ollama /api/chat and Home Assistant /api/conversation/process -------------------------


async def ollama_chat(request: web.Request) -> web.StreamResponse:
    body = await _record(request)
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return web.json_response({"error": "messages required"}, status=400)
    user = next((m for m in reversed(body["messages"]) if m.get("role") == "user"), {})
    answer = think(request.app[STATE], {"text": user.get("content", ""), "session_id": "ollama"})
    model = str(body.get("model", ""))

    async def stream() -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        async for word in _words(answer.first + answer.rest, request.app[OPTIONS].word_delay_s):
            line = {"model": model, "message": {"role": "assistant", "content": word}, "done": False}
            _mark_first_write(request)
            await response.write((json.dumps(line) + "\n").encode())
        await response.write((json.dumps({"model": model, "done": True, "done_reason": "stop",
                                          "message": {"role": "assistant", "content": ""}}) + "\n").encode())
        await response.write_eof()
        return response

    return await _watch_disconnect(request, "ollama", stream)


async def assist(request: web.Request) -> web.StreamResponse:
    body = await _record(request)
    if not _authorised(request):
        return web.json_response({"message": "unauthorized"}, status=401)
    if not isinstance(body, dict) or not isinstance(body.get("text"), str):
        return web.json_response({"message": "text required"}, status=400)
    conversation_id = str(body.get("conversation_id") or uuid.uuid4().hex)
    answer = think(request.app[STATE], {"text": body["text"], "session_id": conversation_id})
    _mark_first_write(request)
    return web.json_response({
        "conversation_id": conversation_id,
        "response": {"response_type": "action_done", "language": body.get("language", "en"),
                     "speech": {"plain": {"speech": answer.first + answer.rest, "extra_data": None}}},
    })


def make_app(
    *, shape: str = "sse", word_delay_s: float = 0.0, slow_work_s: float = 1.0,
    heartbeat_s: float = 0.25, api_key: str = "",
) -> web.Application:
    """The example server as an aiohttp app; ``app[STATE]`` records what it received."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}")
    app = web.Application()
    app[STATE] = ServerState()
    app[OPTIONS] = Options(shape, word_delay_s, slow_work_s, heartbeat_s, api_key)
    app.router.add_post("/agent", agent)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/api/chat", ollama_chat)
    app.router.add_post("/api/conversation/process", assist)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--shape", choices=SHAPES, default="sse", help="default reply shape of /agent")
    parser.add_argument("--word-delay-ms", type=float, default=40.0, help="pause between streamed words")
    parser.add_argument("--slow-work-ms", type=float, default=1500.0, help="the slow questions' work")
    parser.add_argument("--api-key", default="", help="require 'Authorization: Bearer KEY'")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    app = make_app(shape=args.shape, word_delay_s=args.word_delay_ms / 1000,
                   slow_work_s=args.slow_work_ms / 1000, api_key=args.api_key)
    web.run_app(app, host=args.host, port=args.port, handler_cancellation=True)


if __name__ == "__main__":
    main()
