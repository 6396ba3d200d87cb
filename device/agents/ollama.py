"""provider = "ollama": ``POST {base_url}/api/chat`` with ``stream: true``, NDJSON lines
(``message.content`` and ``done``), the same heard-history as openai, ``keep_alive`` and
model ``options`` from the config."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from edgevoice.device.agents.base import AgentClient, UserTurn
from edgevoice.device.agents.errors import AgentBadReplyError, AgentHttpStatusError, AgentIdleTimeoutError
from edgevoice.device.agents.http import HttpTransport
from edgevoice.device.agents.openai import chat_messages, system_text
from edgevoice.device.agents.streams import LineBuffer
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


class OllamaClient(AgentClient):
    provider = "ollama"

    def __init__(self, ollama: OllamaConfig, llm: LlmConfig) -> None:
        super().__init__(history_turns=llm.history_turns, max_reply_chars=llm.max_reply_chars)
        self._config = ollama
        self._llm = llm
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
        return body

    async def _stream(self, turn: UserTurn) -> AsyncGenerator[str, None]:
        deadline = asyncio.get_running_loop().time() + self._config.timeout_ms / 1000
        body = self.build_body(turn)
        for attempt in (1, 2):
            said = False
            try:
                async for delta in self._one_request(body, deadline):
                    said = True
                    yield delta
                return
            except AgentIdleTimeoutError:
                if attempt == 2 or said:
                    raise
                _LOGGER.warning("%s went silent past idle_timeout_ms; re-sending the turn once", WHAT)

    async def _one_request(self, body: dict[str, Any], deadline: float) -> AsyncIterator[str]:
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
