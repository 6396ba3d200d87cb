"""The daemon's :class:`~edgevoice.device.control.DeviceControl`: agent tools and MQTT
fleet commands act on the running device through this one object."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from edgevoice.device.config import load_config, revision, to_dict
from edgevoice.device.config.schema import GpioOutputConfig
from edgevoice.device.control import DeviceControl
from edgevoice.device.events import EventType

if TYPE_CHECKING:
    from edgevoice.device.runtime.daemon import Daemon

_LOGGER = logging.getLogger(__name__)


class DaemonControl(DeviceControl):
    """The running daemon's control (see :mod:`edgevoice.device.control`)."""

    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon

    async def set_volume(self, level: float) -> float:
        assert self._daemon.speaker is not None
        self._daemon.speaker.volume = level
        self._daemon.bus.emit(EventType.VOLUME_CHANGED, level=self._daemon.speaker.volume)
        self._daemon._save_volume_soon(self._daemon.speaker.volume)
        return self._daemon.speaker.volume

    async def end_conversation(self) -> None:
        if self._daemon.conversation is not None:
            self._daemon.conversation.end_after_reply()

    async def start_over(self) -> None:
        if self._daemon.conversation is not None:
            self._daemon._spawn(self._daemon.conversation.reset())

    async def gpio_output(self, output: GpioOutputConfig, on: bool | None) -> bool:
        from edgevoice.device.hardware.gpio_outputs import drive_output

        return await drive_output(self._daemon._outputs, output, on, self._daemon._pin_factory)

    async def knowledge_sync(self, url: str, sha256: str) -> dict[str, Any]:
        return await self._daemon.knowledge_sync(url, sha256)

    async def timers_action(self, action: str, name: str | None = None,
                            seconds: float | None = None) -> dict[str, Any]:
        if self._daemon.timers is None:
            return await super().timers_action(action, name, seconds)
        result: dict[str, Any] = await self._daemon.timers.handle(action, name, seconds)
        return result

    # Remote diagnostics (edgevoice.device.mqtt.remote.DiagnosticsTarget).

    async def doctor(self, only: tuple[str, ...]) -> dict[str, Any]:
        from edgevoice.device.runtime.diagnostics import run_doctor

        return await run_doctor(self._daemon, only)

    async def aec_selftest(self) -> dict[str, Any]:
        from edgevoice.device.runtime.diagnostics import run_live_selftest

        return await run_live_selftest(self._daemon, self._daemon.tap)

    async def logs(self, lines: int) -> dict[str, Any]:
        from edgevoice.device.runtime.diagnostics import read_logs

        return read_logs(lines)

    # Announcements and remote turns (edgevoice.device.mqtt.announce_cmd.AnnounceTarget).

    async def announce(self, *, text: str, url: str, then_listen: bool, urgent: bool,
                       wait_s: float) -> dict[str, Any]:
        from edgevoice.device.runtime.announce import Announcement

        item = Announcement(text=text, url=url, then_listen=then_listen, urgent=urgent, wait_s=wait_s)
        return await self._daemon.announcer.announce(item)

    async def listen(self) -> dict[str, Any]:
        return await self._daemon.announcer.listen()

    async def say(self, text: str) -> None:
        if self._daemon.conversation is not None:
            await self._daemon.conversation.say(text)

    async def interrupt(self) -> None:
        if self._daemon.conversation is not None:
            await self._daemon.conversation.interrupt()

    async def reset_session(self) -> None:
        if self._daemon.conversation is not None:
            await self._daemon.conversation.reset()

    async def mute(self, mic: bool) -> None:
        if self._daemon.conversation is not None:
            await self._daemon.conversation.set_muted(mic)
        self._daemon.bus.emit(EventType.MIC_MUTED, muted=mic)

    async def get_config(self) -> dict[str, Any]:
        return to_dict(self._daemon.config, redact=True)

    async def set_config(self, patch: dict[str, Any]) -> dict[str, Any]:
        from edgevoice.device.config.loader import parse_override, read_toml
        from edgevoice.device.config.persist import persist_patch

        target = self._daemon._writable_config_path()
        below = [(str(p), read_toml(p)) for p in self._daemon._lower_layers(target)]
        above = [("--set", parse_override(text)) for text in self._daemon.overrides]
        result = await asyncio.to_thread(persist_patch, target, patch, below=below, above=above)
        self._daemon._apply_live(result.config)
        return {
            "changed": list(result.changed),
            "restart_required": result.restart_required,
            "restart_keys": list(result.restart_keys),
            "revision": result.revision,
            "path": str(target),
        }

    async def reload(self) -> None:
        self._daemon.notifier.reloading()
        try:
            loaded = await asyncio.to_thread(load_config, self._daemon.config_path, self._daemon.overrides)
        except Exception as err:
            _LOGGER.error("reload failed, keeping the running config: %s", err)
            self._daemon.bus.emit(EventType.ERROR, source="config", code="config_invalid", message=str(err))
            return
        finally:
            self._daemon.notifier.ready()
        daemon = self._daemon
        restart = daemon._apply_live(loaded.config)
        daemon.loaded = loaded
        daemon.bus.emit(EventType.CONFIG_RELOADED, revision=revision(loaded.config), restart_keys=restart)

    async def restart(self) -> None:
        self._daemon._restart_requested = True
        loop = asyncio.get_running_loop()
        loop.call_later(0.5, self._daemon.stop)  # let the command's answer go out first

    async def fetch_model(self, name: str) -> dict[str, Any]:
        from edgevoice.models import fetch_model

        location = await asyncio.to_thread(fetch_model, name, self._daemon.config.models.dir or None)
        return location.as_dict()

    async def state(self) -> dict[str, Any]:
        daemon = self._daemon
        conversation = daemon.conversation
        return {
            "state": str(conversation.state) if conversation else "starting",
            "volume": daemon.speaker.volume if daemon.speaker else daemon.config.audio.volume,
            "mic_muted": bool(conversation and conversation.muted),
            "provider": daemon.config.llm.provider,
            "session_id": daemon.agent.session_id if daemon.agent else None,
            "config_revision": revision(daemon.config),
            **(daemon.timers.snapshot() if daemon.timers is not None else {}),
        }
