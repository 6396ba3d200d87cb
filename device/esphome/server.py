"""The ESPHome native API surface: the server, its clients, the device's identity.

It sits beside the MQTT surface over the device's control interface
(:class:`EsphomeControl`) and the event bus, and reaches into no other surface.
Clients beyond ``[esphome] max_clients`` are refused; state changes seen on the bus
(volume, mute, the conversation's state, a turn's metrics) go to every client that
subscribed to states.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Iterable
from typing import Any, Protocol

from google.protobuf.message import Message

from edgevoice.device.config.sections.esphome import EsphomeConfig, decode_key
from edgevoice.device.esphome import entities
from edgevoice.device.esphome.background import Background
from edgevoice.device.esphome.entities import Command, CommandKind, DeviceView
from edgevoice.device.esphome.messages import ESPHOME_VERSION, make
from edgevoice.device.esphome.session import ApiSession
from edgevoice.device.esphome.voice import FEATURES, VoiceBridge
from edgevoice.device.events import Event, EventBus, EventType
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)

STATE_EVENTS = frozenset({EventType.VOLUME_CHANGED, EventType.MIC_MUTED, EventType.STATE_CHANGED,
                          EventType.METRICS_TURN, EventType.AEC_STATUS})


class EsphomeError(EdgeVoiceError):
    code = "esphome_failed"


class EsphomeControl(Protocol):
    """What the surface may do to the device (the daemon's control interface)."""

    async def set_volume(self, level: float) -> None: ...

    async def mute(self, mic: bool) -> None: ...

    async def set_speaker_muted(self, muted: bool) -> None: ...

    async def stop_playback(self) -> None: ...

    def view(self) -> DeviceView: ...


def node_name(config: EsphomeConfig, device_id: str) -> str:
    if config.name:
        return config.name
    tail = "".join(c for c in device_id.lower() if c.isalnum())[-6:] or "device"
    return f"edgevoice-{tail}"


def mac_for(device_id: str) -> str:
    """A stable MAC-like id from the device id (locally administered, unicast): HA keys
    the device by it."""
    digest = bytearray(hashlib.sha256(device_id.encode()).digest()[:6])
    digest[0] = (digest[0] & 0xFC) | 0x02
    return ":".join(f"{b:02X}" for b in digest)


class EsphomeSurface:
    """Serves the native API on ``[esphome] host:port``."""

    def __init__(self, config: EsphomeConfig, *, device_id: str, device_name: str, version: str,
                 control: EsphomeControl, bus: EventBus, bridge: VoiceBridge) -> None:
        self.config = config
        self.control = control
        self.bus = bus
        self.bridge = bridge
        self.version = version
        self.node_name = node_name(config, device_id)
        self.friendly_name = config.friendly_name or device_name or self.node_name
        self.mac = mac_for(device_id)
        self.psk = decode_key(config.encryption_key) if config.encryption_key else None
        if config.encryption_key and (self.psk is None or len(self.psk) != 32):
            raise EsphomeError("[esphome] encryption_key must be base64 of 32 bytes "
                               "(make one with: openssl rand -base64 32)")
        self.sessions: set[ApiSession] = set()
        self._server: asyncio.Server | None = None
        self._zeroconf: Any = None
        self._background = Background("an ESPHome API command")
        self._state_push: asyncio.TimerHandle | None = None
        self._unsubscribe = bus.subscribe(self._on_event)

    @property
    def port(self) -> int:
        if self._server is None or not self._server.sockets:
            return self.config.port
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._accept, self.config.host, self.config.port)
        except OSError as err:
            raise EsphomeError(f"cannot serve the ESPHome API on {self.config.host}:{self.config.port}: "
                               f"{err.strerror or err}; choose another [esphome] port") from err
        _LOGGER.info("ESPHome API on %s:%d as %r (%s)", self.config.host, self.port, self.node_name,
                     "encrypted" if self.psk else "plaintext")
        if self.config.zeroconf:
            from edgevoice.device.esphome.discovery import advertise

            try:
                self._zeroconf = await advertise(self.service_info())
            except Exception as err:
                _LOGGER.warning("zeroconf advertisement failed (%s); add the device in HA by address", err)

    def service_info(self) -> Any:
        from edgevoice.device.esphome.discovery import service_info

        return service_info(self.node_name, self.friendly_name, self.mac, self.port, self.version,
                            host=self.config.host, encrypted=self.psk is not None)

    async def stop(self) -> None:
        self._unsubscribe()
        if self._state_push is not None:
            self._state_push.cancel()
        if self._zeroconf is not None:
            from edgevoice.device.esphome.discovery import withdraw

            with contextlib.suppress(Exception):
                await withdraw(self._zeroconf)
        if self._server is not None:
            self._server.close()
        for session in list(self.sessions):
            await session.close()
        self._background.cancel()
        if self._server is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await self._server.wait_closed()
        self.bridge.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.sessions) >= self.config.max_clients:
            _LOGGER.warning("refused API client %s: already %d client(s) ([esphome] max_clients)",
                            writer.get_extra_info("peername"), len(self.sessions))
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            return
        session = ApiSession(self, reader, writer)
        self.sessions.add(session)
        self.bus.emit(EventType.ESPHOME_CLIENT, status="connected", clients=len(self.sessions))
        await session.run()

    def forget(self, session: ApiSession) -> None:
        if session in self.sessions:
            self.sessions.discard(session)
            self.bus.emit(EventType.ESPHOME_CLIENT, status="disconnected", clients=len(self.sessions))

    # --- what clients see ---------------------------------------------------------------

    def device_info(self) -> Message:
        return make("DeviceInfoResponse", uses_password=False, name=self.node_name,
                    friendly_name=self.friendly_name, mac_address=self.mac,
                    esphome_version=ESPHOME_VERSION, compilation_time="", model="edgevoice",
                    manufacturer="edgevoice", project_name="edgevoice.voice-satellite",
                    project_version=self.version, voice_assistant_feature_flags=FEATURES,
                    legacy_voice_assistant_version=3, api_encryption_supported=self.psk is not None)

    def view(self) -> DeviceView:
        return self.control.view()

    def _on_event(self, event: Event) -> None:
        if (event.type in STATE_EVENTS and self._state_push is None
                and any(s.wants_states for s in self.sessions)):
            # Coalesce a burst (a turn's state changes) into one push.
            self._state_push = asyncio.get_running_loop().call_later(0.05, self._push_states)

    def _push_states(self) -> None:
        self._state_push = None
        states = entities.states(self.view())
        for session in list(self.sessions):
            if session.wants_states:
                session.send(states)

    def command(self, commands: Iterable[Command]) -> None:
        for command in commands:
            self._background.spawn(self._apply(command))

    async def _apply(self, command: Command) -> None:
        if command.kind is CommandKind.VOLUME:
            await self.control.set_volume(float(command.value))
        elif command.kind is CommandKind.MIC_MUTE:
            await self.control.mute(bool(command.value))
        elif command.kind is CommandKind.SPEAKER_MUTE:
            await self.control.set_speaker_muted(bool(command.value))
        elif command.kind is CommandKind.STOP:
            await self.control.stop_playback()
        elif command.kind is CommandKind.PLAY_URL:
            self.bridge.play_url(str(command.value))
        self._push_states()



__all__ = ["EsphomeControl", "EsphomeError", "EsphomeSurface", "mac_for", "node_name"]
