"""The one place the console meets the device's control interface.

Commands on the WebSocket are the fleet's commands (``device/mqtt/commands.py``): the
same names, argument checks, error codes and answers, through the same
:class:`CommandRouter`. The console offers the ones a person at the screen needs; the
fleet-administration ones (config, restart, model fetch) stay on MQTT. When the
device's control facade lands, only this module changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from edgevoice.device.control import DeviceControl
from edgevoice.device.mqtt.commands import Answer, CommandRouter, ErrorCode

CONSOLE_COMMANDS = ("ping", "state", "say", "interrupt", "mute", "set_volume", "reset_session")


class ConsoleCommands:
    """One WebSocket's commands: validated and rate-limited like MQTT's."""

    def __init__(self, target: DeviceControl, *, device_id: str, rate: float, burst: int,
                 clock: Callable[[], float] | None = None) -> None:
        kwargs: dict[str, Any] = {} if clock is None else {"clock": clock}
        self._router = CommandRouter(target, device_id=device_id, rate=rate, burst=burst, **kwargs)
        self._device_id = device_id

    async def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        """``{"command": name, "id": ..., **args}`` -> the MQTT answer, typed ``command.result``."""
        body = dict(message)
        name = body.pop("command")
        if not isinstance(name, str) or name not in CONSOLE_COMMANDS:
            answer = Answer.failure(
                body.get("id"), ErrorCode.UNKNOWN_COMMAND,
                f"unknown command {name!r} on the console (known: {', '.join(CONSOLE_COMMANDS)}); "
                "config, reload, restart and fetch_model are fleet commands, over MQTT",
            )
        else:
            answer = await self._router.handle(name, json.dumps(body).encode())
        return {"type": "command.result", **answer.as_dict(self._device_id)}
