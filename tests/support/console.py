"""A console served on loopback over a real event bus, with a recording command target."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgevoice.device.config import load_config
from edgevoice.device.config.schema import GpioOutputConfig
from edgevoice.device.console.desk import OperatorDesk
from edgevoice.device.console.server import ConsoleServer
from edgevoice.device.control import DeviceControl
from edgevoice.device.events import EventBus


class RecordingTarget(DeviceControl):
    """The device's control interface, recording what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.volume = 0.5
        self.muted = False

    async def say(self, text: str) -> None:
        self.calls.append(("say", text))

    async def interrupt(self) -> None:
        self.calls.append(("interrupt", None))

    async def reset_session(self) -> None:
        self.calls.append(("reset_session", None))

    async def set_volume(self, level: float) -> float:
        self.calls.append(("set_volume", level))
        self.volume = level
        return level

    async def end_conversation(self) -> None:
        self.calls.append(("end_conversation", None))

    async def start_over(self) -> None:
        self.calls.append(("start_over", None))

    async def gpio_output(self, output: GpioOutputConfig, on: bool | None) -> bool:
        self.calls.append(("gpio_output", (output.name, on)))
        return bool(on)

    async def get_config(self) -> dict[str, Any]:
        return {}

    async def set_config(self, patch: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("set_config", patch))
        return {"changed": [], "restart_required": False}

    async def reload(self) -> None:
        self.calls.append(("reload", None))

    async def fetch_model(self, name: str) -> dict[str, Any]:
        self.calls.append(("fetch_model", name))
        return {"name": name}

    async def mute(self, mic: bool) -> None:
        self.calls.append(("mute", mic))
        self.muted = mic

    async def state(self) -> dict[str, Any]:
        return {"state": "listening", "volume": self.volume, "mic_muted": self.muted,
                "provider": "local", "session_id": "s1", "config_revision": "r1"}

    async def restart(self) -> None:
        self.calls.append(("restart", None))


@dataclass
class Console:
    server: ConsoleServer
    bus: EventBus
    target: RecordingTarget
    telemetry: dict[str, Any]

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def token(self) -> str:
        return self.server.tokens.full

    @property
    def captions_token(self) -> str:
        return self.server.tokens.captions

    def bearer(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, *overrides: str) -> AsyncIterator[Console]:
    config = load_config(None, ("console.enabled=true", "console.listen=127.0.0.1:0", *overrides)).config
    bus = EventBus()
    target = RecordingTarget()
    telemetry: dict[str, Any] = {"state": "listening", "echo_reduction_db": 23.5}
    server = ConsoleServer(config.console, config.operator, bus=bus, target=target,
                           desk=OperatorDesk(config.operator.quick_replies), device_id="test-device",
                           state_dir=tmp_path / "state", telemetry=lambda: telemetry,
                           operator_words=lambda: config.llm.provider == "operator")
    await server.start()
    try:
        yield Console(server, bus, target, telemetry)
    finally:
        await server.stop()
