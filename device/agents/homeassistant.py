"""provider = "homeassistant": Home Assistant's Assist, ``POST {url}/api/conversation/process``.

The API does not stream: the reply is buffered and spoken as one piece. The
``conversation_id`` Assist returns is kept for the session and dropped on reset.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

from edgevoice.device.agents.agent_http import reply_limit_bytes
from edgevoice.device.agents.base import AgentClient, UserTurn
from edgevoice.device.agents.errors import AgentBadReplyError
from edgevoice.device.agents.http import HttpTransport, bearer
from edgevoice.device.config.schema import HomeassistantConfig, LlmConfig

_LOGGER = logging.getLogger(__name__)

WHAT = "Home Assistant"


def assist_speech(data: Any) -> tuple[str, str | None]:
    """``response.speech.plain.speech`` and the conversation id of an Assist reply."""
    try:
        speech = data["response"]["speech"]["plain"]["speech"]
    except (KeyError, TypeError) as err:
        raise AgentBadReplyError(
            f"{WHAT} replied without response.speech.plain.speech; is the URL a Home Assistant "
            "instance?"
        ) from err
    if not isinstance(speech, str):
        raise AgentBadReplyError(f"{WHAT} replied with a speech that is not text")
    conversation_id = data.get("conversation_id") if isinstance(data, dict) else None
    return speech, conversation_id if isinstance(conversation_id, str) else None


class HomeAssistantClient(AgentClient):
    provider = "homeassistant"
    uses_knowledge = False  # Assist has its own intents; no context is sent

    def __init__(self, config: HomeassistantConfig, llm: LlmConfig, *, language: str) -> None:
        super().__init__(history_turns=llm.history_turns, max_reply_chars=llm.max_reply_chars)
        self._config = config
        self._llm = llm
        self.language = config.language or language
        self.conversation_id: str | None = None
        self._transport = HttpTransport(provider=self.provider, verify_tls=config.verify_tls)
        self.url = config.url.rstrip("/") + "/api/conversation/process"

    def _on_reset(self) -> None:
        self.conversation_id = None

    def build_body(self, turn: UserTurn) -> dict[str, Any]:
        body: dict[str, Any] = {"text": turn.text, "language": self.language}
        if self._config.agent_id:
            body["agent_id"] = self._config.agent_id
        if self.conversation_id:
            body["conversation_id"] = self.conversation_id
        return body

    async def _stream(self, turn: UserTurn) -> AsyncGenerator[str, None]:
        deadline = asyncio.get_running_loop().time() + self._config.timeout_ms / 1000
        session_id = self.session_id
        async with self._transport.post(
            self.url, json_body=self.build_body(turn), headers=bearer(self._config.token),
            deadline=deadline, what=WHAT,
        ) as response:
            raw = await self._transport.read_all(
                response, deadline=deadline, limit_bytes=reply_limit_bytes(self._llm.max_reply_chars),
                what=WHAT,
            )
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise AgentBadReplyError(f"{WHAT} replied with invalid JSON ({err})") from err
        speech, conversation_id = assist_speech(data)
        if conversation_id and session_id == self.session_id:
            self.conversation_id = conversation_id
        yield speech

    async def aclose(self) -> None:
        await self._transport.aclose()
