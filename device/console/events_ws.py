"""``/v1/events``: the event bus on a WebSocket, and the commands and operator answers
that come back on it.

Out: one JSON object per message, exactly as ``edgevoice run --events`` prints them
(``docs/events.md``), withheld or stripped of text unless ``[console] transcripts`` (or
the socket is an operator's while the operator is the agent). First a
``console.hello`` with the role and the device's state. In: ``{"command": ...}``
(answered with ``command.result``), ``{"type": "operator.join"}`` and
``{"type": "operator.answer", "turn_id", "text"}``. A client that cannot keep up loses
the oldest events, never the device's time.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web

from edgevoice.device.console.auth import Role
from edgevoice.device.console.control import ConsoleCommands
from edgevoice.device.console.desk import OperatorDesk
from edgevoice.device.events import Event, EventBus
from edgevoice.device.runtime.tasks import cancel_task

_LOGGER = logging.getLogger(__name__)

QUEUE_LIMIT = 512
MAX_MESSAGE_BYTES = 16 * 1024


class EventSocket:
    """One connected client."""

    def __init__(self, ws: web.WebSocketResponse, role: Role, *, transcripts: Callable[[], bool],
                 operator_words: Callable[[], bool], commands: ConsoleCommands,
                 desk: OperatorDesk | None) -> None:
        self.ws = ws
        self.role = role
        self._transcripts = transcripts
        self._operator_words = operator_words
        self._commands = commands
        self._desk = desk
        self._queue: deque[dict[str, Any]] = deque(maxlen=QUEUE_LIMIT)
        self._wake = asyncio.Event()
        self.operator_id: str | None = None
        self.dropped = 0

    # --- out ---------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
        self._queue.append(message)
        self._wake.set()

    def on_event(self, event: Event) -> None:
        sees_words = self._transcripts() or (self.operator_id is not None and self._operator_words())
        visible = event if sees_words else event.without_personal_data()
        if visible is not None:
            self.send(visible.as_dict())

    async def pump(self) -> None:
        while not self.ws.closed:
            await self._wake.wait()
            self._wake.clear()
            while self._queue and not self.ws.closed:
                await self.ws.send_str(json.dumps(self._queue.popleft(), ensure_ascii=False, default=str))

    # --- in ----------------------------------------------------------------------

    async def receive(self) -> None:
        async for msg in self.ws:
            if msg.type is not WSMsgType.TEXT:
                if msg.type is WSMsgType.BINARY:
                    self.send(_error("invalid_request", "send JSON text messages"))
                continue
            if len(msg.data) > MAX_MESSAGE_BYTES:
                self.send(_error("invalid_request", f"messages are limited to {MAX_MESSAGE_BYTES} bytes"))
                continue
            try:
                body = json.loads(msg.data)
            except ValueError as err:
                self.send(_error("invalid_json", f"the message is not valid JSON: {err}"))
                continue
            if not isinstance(body, dict):
                self.send(_error("invalid_request", "a message must be a JSON object"))
                continue
            await self._handle(body)

    async def _handle(self, body: dict[str, Any]) -> None:
        if self.role is not Role.FULL:
            self.send(_error("forbidden", "this is a read-only captions session", id=body.get("id")))
            return
        if "command" in body:
            self.send(await self._commands.handle(body))
            return
        kind = body.get("type")
        desk = self._desk
        if kind in ("operator.join", "operator.answer") and desk is None:
            self.send(_error("operator_unavailable", "the operator desk is off"))
        elif kind == "operator.join":
            if self.operator_id is None:
                self.operator_id = desk.connect(self.send)  # type: ignore[union-attr]
        elif kind == "operator.answer":
            if self.operator_id is None:
                self.send(_error("invalid_request", "send operator.join before answering"))
                return
            turn_id, text = body.get("turn_id"), body.get("text", "")
            if not isinstance(turn_id, str) or not isinstance(text, str):
                self.send(_error("invalid_argument", "operator.answer takes turn_id and text (strings)"))
                return
            result = desk.answer(self.operator_id, turn_id, text.strip())  # type: ignore[union-attr]
            self.send({"type": "operator.answer.result", **result})
        else:
            self.send(_error("invalid_request",
                             "send {\"command\": name, ...} or an operator.join / operator.answer message"))

    def leave(self) -> None:
        if self._desk is not None and self.operator_id is not None:
            self._desk.disconnect(self.operator_id)
            self.operator_id = None


def _error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"type": "console.error", "error": {"code": code, "message": message}, **extra}


async def serve_socket(sock: EventSocket, bus: EventBus, hello: dict[str, Any]) -> None:
    """Run ``sock`` until the client goes away (or the console stops)."""
    sock.send(hello)
    unsubscribe = bus.subscribe(sock.on_event)
    pump = asyncio.create_task(sock.pump(), name="console-ws-pump")
    try:
        await sock.receive()
    finally:
        unsubscribe()
        sock.leave()
        await cancel_task(pump)
