"""provider = "ollama": ``POST {base_url}/api/chat`` with ``stream: true``, NDJSON lines
(``message.content`` and ``done``), the same heard-history as openai, ``keep_alive`` and
model ``options`` from the config, and the same device tools as openai (Ollama's
``tools`` / ``message.tool_calls``, results sent back as ``role: tool`` messages)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from edgevoice.device.agents.base import AgentClient, UserTurn
from edgevoice.device.agents.errors import (
    AgentBadReplyError,
    AgentHttpStatusError,
    AgentIdleTimeoutError,
    AgentToolError,
)
from edgevoice.device.agents.http import HttpTransport
from edgevoice.device.agents.openai import chat_messages, system_text
from edgevoice.device.agents.streams import LineBuffer
from edgevoice.device.agents.tools import DeviceTools, ToolCall
from edgevoice.device.config.schema import LlmConfig, OllamaConfig

_LOGGER = logging.getLogger(__name__)

WHAT = "Ollama"


def ollama_options(config: OllamaConfig) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if config.temperature >= 0:
        options["temperature"] = config.temperature
    if config.num_ctx > 0:
        options["num_ctx"] = config.num_ctx
    if config.num_predict > 0:
        options["num_predict"] = config.num_predict
    if config.seed >= 0:
        options["seed"] = config.seed
    return options


def ndjson_delta(line: str) -> tuple[str, bool]:
    """One NDJSON line of /api/chat: its text and whether it is the last."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as err:
        raise AgentBadReplyError(f"{WHAT} sent a line that is not JSON ({line[:60]!r})") from err
    if not isinstance(data, dict):
        raise AgentBadReplyError(f"{WHAT} sent a line that is not a JSON object")
    if "error" in data:
        raise AgentBadReplyError(f"{WHAT} reported an error: {data['error']}")
    message = data.get("message") or {}
    content = message.get("content", "") if isinstance(message, dict) else ""
    return (content if isinstance(content, str) else ""), bool(data.get("done"))


def ndjson_tool_calls(line: str) -> list[ToolCall]:
    """The tool calls of one NDJSON line (``message.tool_calls``, arguments an object)."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return []
    message = data.get("message") if isinstance(data, dict) else None
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    out: list[ToolCall] = []
    for i, call in enumerate(calls if isinstance(calls, list) else []):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        arguments = function.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        out.append(ToolCall(str(call.get("id") or f"call_{i}"), function["name"], text))
    return out


class OllamaClient(AgentClient):
    provider = "ollama"

    def __init__(self, ollama: OllamaConfig, llm: LlmConfig, tools: DeviceTools | None = None) -> None:
        super().__init__(history_turns=llm.history_turns, max_reply_chars=llm.max_reply_chars)
        self._config = ollama
        self._llm = llm
        self._tools = tools
        self._transport = HttpTransport(provider=self.provider)
        self.url = ollama.base_url.rstrip("/") + "/api/chat"

    def build_body(self, turn: UserTurn) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._config.model,
            "messages": chat_messages(system_text(self._llm, turn), self.recent_history(), turn.text),
            "stream": True,
        }
        if self._config.keep_alive:
            body["keep_alive"] = self._config.keep_alive
        options = ollama_options(self._config)
        if options:
            body["options"] = options
        if self._tools:
            body["tools"] = self._tools.schemas()
        return body

    async def _stream(self, turn: UserTurn) -> AsyncGenerator[str, None]:
        deadline = asyncio.get_running_loop().time() + self._config.timeout_ms / 1000
        body = self.build_body(turn)
        for _round in range(self._llm.max_tool_rounds + 1):
            calls: list[ToolCall] = []
            resent = False  # after going silent: once
            while True:
                said = False
                try:
                    async for delta in self._one_request(body, deadline, calls):
                        said = True
                        yield delta
                    break
                except AgentIdleTimeoutError:
                    if resent or said or calls:
                        raise
                    resent = True
                    _LOGGER.warning("%s went silent past idle_timeout_ms; re-sending the turn once", WHAT)
                except AgentHttpStatusError as err:
                    # A model without tool support refuses any request that offers tools:
                    # go on without them (for this client's life), as before tools existed.
                    if err.status != 400 or "tools" not in err.body.lower() or "tools" not in body:
                        raise
                    _LOGGER.warning("%s model %s does not take tools; carrying on without the device "
                                    "tools", WHAT, self._config.model)
                    self._tools = None
                    body.pop("tools")
            if not calls or self._tools is None:
                return
            # The model asked for device tools: run them, send the results, ask again.
            body["messages"].append({"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": c.name, "arguments": json.loads(c.arguments or "{}")}} for c in calls]})
            for call in calls:
                result = await self._tools.run(call, turn.text)
                body["messages"].append({"role": "tool", "content": result, "tool_name": call.name})
        raise AgentToolError(
            f"{WHAT} kept calling tools for {self._llm.max_tool_rounds} rounds; check the model "
            "or raise [llm] max_tool_rounds"
        )

    async def _one_request(self, body: dict[str, Any], deadline: float,
                           calls: list[ToolCall] | None = None) -> AsyncIterator[str]:
        idle_s = self._config.idle_timeout_ms / 1000
        try:
            async with self._transport.post(
                self.url, json_body=body, headers={}, deadline=deadline, what=WHAT
            ) as response:
                lines = LineBuffer()
                while True:
                    chunk = await self._transport.read_chunk(
                        response, deadline=deadline, idle_s=idle_s, what=WHAT
                    )
                    for line in lines.feed(chunk) if chunk else lines.flush():
                        if not line.strip():
                            continue
                        text, done = ndjson_delta(line)
                        if calls is not None:
                            calls.extend(ndjson_tool_calls(line))
                        if text:
                            yield text
                        if done:
                            await self._transport.finish(response, deadline=deadline)
                            return
                    if not chunk:
                        raise AgentBadReplyError(f"{WHAT} ended the stream without a 'done' line")
        except AgentHttpStatusError as err:
            if err.status == 404 and "model" in err.body.lower():
                raise AgentHttpStatusError(
                    f"{WHAT} does not have the model {self._config.model!r}; run "
                    f"'ollama pull {self._config.model}' on the server or fix [ollama] model",
                    status=err.status, body=err.body,
                ) from err
            raise

    async def aclose(self) -> None:
        await self._transport.aclose()
