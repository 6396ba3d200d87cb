"""Device-side tools offered to OpenAI-compatible models: their JSON schemas and execution.

Built in: ``current_time``, ``set_volume``, ``end_conversation``, ``timer``; plus one tool per
``[[llm.gpio_outputs]]`` entry. A tool result is a JSON string sent back in a ``tool``
message; a tool that fails tells the model why instead of failing the turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from edgevoice.device.agents.actions import DeviceActions
from edgevoice.device.agents.errors import AgentConfigError
from edgevoice.device.config.schema import GpioOutputConfig

_LOGGER = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_YES = re.compile(
    r"\b(yes|yeah|yep|sure|confirm(ed)?|do it|go ahead|please do|okay|ok|affirmative)\b", re.I
)
_NO = re.compile(r"\b(no|nope|don't|do not|cancel|stop|never)\b", re.I)


# Set while a reply is prepared ahead of its turn (device/runtime/speculation.py): awaited
# before any tool runs, so nothing acts for a reply that may never be heard.
TOOL_GATE: ContextVar[Callable[[], Awaitable[None]] | None] = ContextVar("edgevoice_tool_gate",
                                                                         default=None)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One assembled tool call from the model."""

    id: str
    name: str
    arguments: str


def is_affirmative(text: str) -> bool:
    """Does the person's own turn say yes (and not no)?"""
    return bool(_YES.search(text)) and not _NO.search(text)


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


class DeviceTools:
    """The tools one client offers, and their execution against :class:`DeviceActions`."""

    def __init__(
        self,
        builtins: tuple[str, ...],
        gpio_outputs: tuple[GpioOutputConfig, ...],
        actions: DeviceActions | None,
        *,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._actions = actions
        self._now = now or (lambda: datetime.now().astimezone())
        # Tools that act on the device exist only when the runtime gave us the device.
        self._builtins = tuple(
            name for name in builtins if name == "current_time" or actions is not None
        )
        self._gpio: dict[str, GpioOutputConfig] = {}
        for output in gpio_outputs:
            if not _NAME.match(output.name):
                raise AgentConfigError(
                    f"[[llm.gpio_outputs]] name {output.name!r} must be 1-64 letters, digits, _ or -"
                )
            if output.name in self._builtins or output.name in self._gpio:
                raise AgentConfigError(f"[[llm.gpio_outputs]] name {output.name!r} is used twice")
            if output.pin < 0:
                raise AgentConfigError(f"[[llm.gpio_outputs]] {output.name!r} needs a pin number")
            if actions is not None:
                self._gpio[output.name] = output

    def __bool__(self) -> bool:
        return bool(self._builtins or self._gpio)

    def schemas(self) -> list[dict[str, Any]]:
        """The ``tools`` array of a /chat/completions request."""
        tools: list[dict[str, Any]] = []
        if "current_time" in self._builtins:
            tools.append(_function("current_time", "The current local date and time on the device.", {}, []))
        if "set_volume" in self._builtins:
            tools.append(_function(
                "set_volume", "Set the speaker volume.",
                {"level": {"type": "number", "description": "0 (silent) to 100 (loudest), percent"}},
                ["level"],
            ))
        if "end_conversation" in self._builtins:
            tools.append(_function(
                "end_conversation",
                "End the conversation when the person says goodbye or asks you to stop.", {}, [],
            ))
        if "timer" in self._builtins:
            tools.append(_function(
                "timer",
                "Kitchen timers on the device, several at once, each with a name. They ring on the "
                "device until the person says stop. Use it to set one, say how long is left, or cancel.",
                {"action": {"type": "string", "enum": ["set", "left", "cancel"]},
                 "seconds": {"type": "number", "description": "for set: the duration in seconds"},
                 "name": {"type": "string", "description": "optional, e.g. pasta; default 'timer'"}},
                ["action"],
            ))
        for output in self._gpio.values():
            properties: dict[str, Any] = {}
            required: list[str] = []
            description = output.description or f"GPIO output {output.name}"
            if output.mode == "switch":
                properties["on"] = {"type": "boolean", "description": "true: switch on; false: off"}
                required.append("on")
            if output.confirm:
                properties["confirmed"] = {
                    "type": "boolean",
                    "description": "true only after the person said yes to doing this",
                }
                description += " Ask the person to confirm before calling; they must say yes."
            tools.append(_function(output.name, description, properties, required))
        return tools

    async def run(self, call: ToolCall, user_text: str) -> str:
        """Execute one call; the JSON result for the model (errors included, not raised)."""
        gate = TOOL_GATE.get()
        if gate is not None:
            await gate()
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as err:
            return json.dumps({"error": f"invalid arguments: {err}"})
        try:
            result = await self._run(call.name, args, user_text)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a failing device action is reported to the model
            _LOGGER.warning("tool %s failed: %s", call.name, err)
            result = {"error": str(err) or type(err).__name__}
        _LOGGER.info("tool %s(%s) -> %s", call.name, call.arguments, result)
        return json.dumps(result)

    async def _run(self, name: str, args: dict[str, Any], user_text: str) -> dict[str, Any]:
        if name == "current_time" and "current_time" in self._builtins:
            now = self._now()
            return {"datetime": now.isoformat(timespec="seconds"),
                    "spoken": now.strftime("%A %d %B %Y, %H:%M")}
        actions = self._actions
        if name == "set_volume" and "set_volume" in self._builtins and actions is not None:
            level = float(args.get("level", 50))
            applied = await actions.set_volume(min(100.0, max(0.0, level)) / 100.0)
            return {"volume_percent": round(applied * 100)}
        if name == "end_conversation" and "end_conversation" in self._builtins and actions is not None:
            await actions.end_conversation()
            return {"ok": True, "note": "say a short goodbye"}
        if name == "timer" and "timer" in self._builtins and actions is not None:
            seconds = args.get("seconds")
            label = args.get("name")
            return await actions.timers_action(
                str(args.get("action", "")), str(label) if label else None,
                float(seconds) if isinstance(seconds, int | float) else None,
            )
        output = self._gpio.get(name)
        if output is not None and actions is not None:
            if output.confirm and not (args.get("confirmed") is True and is_affirmative(user_text)):
                return {"done": False,
                        "needs_confirmation": "ask the person to confirm; call again once they say yes"}
            on = bool(args["on"]) if output.mode == "switch" and "on" in args else None
            state = await actions.gpio_output(output, on)
            return {"done": True, "output": output.name, "on": state}
        return {"error": f"unknown tool {name!r}"}
