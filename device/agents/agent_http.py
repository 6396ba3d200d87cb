"""provider = "agent": the HTTP agent contract.

One ``POST url`` per user turn with a JSON body (``session_id``, ``resource_id`` when an
identity is configured, ``type``, ``text`` and, only when they apply, ``system``,
``interrupted_text``, ``summary``). The reply is read by its Content-Type:
``application/json`` (``{"text"}`` or ``{"response"}``, buffered), ``text/plain``
(streamed) or ``text/event-stream`` (``data:`` lines of ``{"delta"}`` JSON or raw text,
``data: [DONE]`` ends it). ``context`` (a list of strings: the knowledge chunks that
matched the turn, docs/knowledge.md) is sent only when the turn matched; a turn that
matched nothing carries no ``context`` key at all, and ``text`` is always exactly what
the person said.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import aiohttp

from edgevoice.device.agents.base import AgentClient, Exchange, UserTurn
from edgevoice.device.agents.errors import AgentBadReplyError, AgentError
from edgevoice.device.agents.http import HttpTransport, bearer
from edgevoice.device.agents.streams import LineBuffer, SseParser
from edgevoice.device.config.schema import AgentConfig, LlmConfig

_LOGGER = logging.getLogger(__name__)

SUMMARY_SYSTEM = (
    "Summarise the conversation below for the assistant's own memory in at most five short "
    "sentences: who the person is, what they asked for, what was decided and what is still open. "
    "Keep names, numbers and promises. Write only the summary."
)


def reply_limit_bytes(max_reply_chars: int) -> int:
    """Bytes a buffered reply may take: UTF-8 text of the cap plus JSON framing."""
    return max_reply_chars * 4 + 65536


async def stream_contract_reply(
    transport: HttpTransport,
    response: aiohttp.ClientResponse,
    *,
    deadline: float,
    max_reply_chars: int,
    what: str,
) -> AsyncIterator[str]:
    """Yield the text of an agent-contract reply, dispatched on its Content-Type."""
    if "Content-Type" not in response.headers:
        raise AgentBadReplyError(
            f"{what} replied without a Content-Type; it must send application/json, "
            "text/plain or text/event-stream"
        )
    kind = response.content_type.lower()
    if kind == "application/json" or kind.endswith("+json"):
        raw = await transport.read_all(
            response, deadline=deadline, limit_bytes=reply_limit_bytes(max_reply_chars), what=what
        )
        yield parse_json_reply(raw, what)
    elif kind == "text/plain":
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := await transport.read_chunk(response, deadline=deadline, idle_s=None, what=what):
            text = decoder.decode(chunk)
            if text:
                yield text
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail
    elif kind == "text/event-stream":
        async for delta in _stream_sse(transport, response, deadline=deadline, what=what):
            yield delta
    else:
        raise AgentBadReplyError(
            f"{what} replied with Content-Type {kind!r}; it must send application/json, "
            "text/plain or text/event-stream"
        )


def parse_json_reply(raw: bytes, what: str) -> str:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AgentBadReplyError(
            f"{what} sent application/json that is not valid JSON ({err}); fix the agent's reply"
        ) from err
    if isinstance(data, dict):
        for key in ("text", "response"):
            value = data.get(key)
            if isinstance(value, str):
                return value
    raise AgentBadReplyError(
        f"{what} sent JSON without a string 'text' (or 'response'); reply {{\"text\": \"...\"}}"
    )


def sse_delta(data: str) -> str | None:
    """The text of one contract SSE event: ``{"delta": ...}`` JSON or raw text."""
    if data.startswith(("{", '"')):
        try:
            parsed: Any = json.loads(data)
        except json.JSONDecodeError:
            return data
        if isinstance(parsed, str):
            return parsed
        if isinstance(parsed, dict):
            for key in ("delta", "text"):
                value = parsed.get(key)
                if isinstance(value, str):
                    return value
            return None
    return data


async def _stream_sse(
    transport: HttpTransport, response: aiohttp.ClientResponse, *, deadline: float, what: str
) -> AsyncIterator[str]:
    lines = LineBuffer()
    parser = SseParser()
    produced = False
    done = False
    ignored = 0
    while not done:
        chunk = await transport.read_chunk(response, deadline=deadline, idle_s=None, what=what)
        batch = lines.feed(chunk) if chunk else [*lines.flush(), ""]
        for line in batch:
            event = parser.feed_line(line)
            if event is None:
                continue
            if event.data.strip() == "[DONE]":
                await transport.finish(response, deadline=deadline)
                done = True
                break
            delta = sse_delta(event.data)
            if delta is None:
                ignored += 1
                continue
            produced = True
            if delta:
                yield delta
        if not chunk:
            break
    if parser.garbage or ignored:
        _LOGGER.debug("%s: ignored %d garbage lines and %d events", what, parser.garbage, ignored)
    if not produced and (parser.garbage or ignored):
        raise AgentBadReplyError(
            f"{what} sent an event stream with no usable 'data:' lines; send "
            "'data: {\"delta\": \"...\"}' lines and 'data: [DONE]'"
        )


class HttpAgentClient(AgentClient):
    """The HTTP agent contract client. See the module docstring."""

    provider = "agent"

    def __init__(self, agent: AgentConfig, llm: LlmConfig, *, resource_id: str = "") -> None:
        super().__init__(history_turns=llm.history_turns, max_reply_chars=llm.max_reply_chars)
        self._config = agent
        self._llm = llm
        self.resource_id = resource_id
        self._transport = HttpTransport(
            provider=self.provider, verify_tls=agent.verify_tls, ca_file=agent.ca_file
        )
        self.summary = ""
        self._summarised = 0  # exchanges folded into the summary so far
        self._summary_task: asyncio.Task[None] | None = None

    def take_session(self, other: AgentClient) -> None:
        super().take_session(other)
        if isinstance(other, HttpAgentClient):  # the rolling summary carries on too
            self.summary, self._summarised = other.summary, other._summarised

    def _on_reset(self) -> None:
        self.summary = ""
        self._summarised = 0
        if self._summary_task is not None:
            self._summary_task.cancel()
            self._summary_task = None

    def build_body(self, turn: UserTurn) -> dict[str, Any]:
        """The JSON body of a chat turn, exactly as sent."""
        body: dict[str, Any] = {"session_id": self.session_id}
        if self.resource_id:
            body["resource_id"] = self.resource_id
        body["type"] = "chat"
        body["text"] = turn.text
        context = turn.context
        if context:
            body["context"] = context
        system = "\n\n".join(
            part
            for part in (self._config.skill, self._llm.low_confidence_note if turn.low_confidence else "")
            if part
        )
        if system:
            body["system"] = system
        if self._interrupted_text is not None:
            body["interrupted_text"] = self._interrupted_text
        if self.summary:
            body["summary"] = self.summary
        return body

    def _headers(self) -> dict[str, str]:
        return {"Accept": "text/event-stream, text/plain, application/json", **bearer(self._config.api_key)}

    async def _stream(self, turn: UserTurn) -> AsyncGenerator[str, None]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._config.timeout_ms / 1000
        body = self.build_body(turn)
        async with self._transport.post(
            self._config.url, json_body=body, headers=self._headers(), deadline=deadline, what="the agent"
        ) as response:
            async for delta in stream_contract_reply(
                self._transport, response, deadline=deadline,
                max_reply_chars=self._llm.max_reply_chars, what="the agent",
            ):
                yield delta

    async def oneshot(self, system: str, text: str) -> str:
        """A stateless ``"oneshot"`` transform: the agent's whole answer to a prompt pair."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._config.timeout_ms / 1000
        body: dict[str, Any] = {"session_id": self.session_id}
        if self.resource_id:
            body["resource_id"] = self.resource_id
        body.update({"type": "oneshot", "system": system, "text": text})
        parts: list[str] = []
        async with self._transport.post(
            self._config.url, json_body=body, headers=self._headers(), deadline=deadline,
            what="the agent (oneshot)",
        ) as response:
            async for delta in stream_contract_reply(
                self._transport, response, deadline=deadline,
                max_reply_chars=self._llm.max_reply_chars, what="the agent (oneshot)",
            ):
                parts.append(delta)
        return "".join(parts).strip()

    # --- the rolling summary -----------------------------------------------------------

    def _on_exchange(self, exchange: Exchange) -> None:
        every = self._llm.summary_after_turns
        if every <= 0 or len(self.history) - self._summarised < every:
            return
        if self._summary_task is not None and not self._summary_task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop: tried again after the next exchange
        self._summary_task = loop.create_task(self._summarise(len(self.history), self.session_id))

    async def _summarise(self, upto: int, session_id: str) -> None:
        lines = [f"Earlier summary: {self.summary}"] if self.summary else []
        for exchange in self.history[self._summarised : upto]:
            lines.append(f"Person: {exchange.user}")
            heard = exchange.assistant + (" [interrupted]" if exchange.interrupted else "")
            lines.append(f"Assistant: {heard}")
        try:
            summary = await self.oneshot(SUMMARY_SYSTEM, "\n".join(lines))
        except AgentError as err:
            _LOGGER.warning("rolling summary failed (%s: %s); keeping the previous one", err.code, err)
            return
        if session_id != self.session_id:
            return  # the conversation was reset meanwhile
        if summary:
            self.summary = summary
            self._summarised = upto
            _LOGGER.info("rolling summary updated (%d exchanges)", upto)

    async def wait_background(self) -> None:
        """Wait for a rolling summary in flight (tests, orderly shutdown)."""
        if self._summary_task is not None:
            await asyncio.gather(self._summary_task, return_exceptions=True)

    async def aclose(self) -> None:
        if self._summary_task is not None:
            self._summary_task.cancel()
            await asyncio.gather(self._summary_task, return_exceptions=True)
        await self._transport.aclose()
