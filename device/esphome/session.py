"""One native API client: framing chosen by its first byte, then its requests answered.

The connection steps are ESPHome's: HelloRequest → HelloResponse (API 1.10, the node
name); an AuthenticationRequest (the old ConnectRequest, which newer clients no longer
send without a password) is answered "password accepted" (the device has none: the
Noise key is the protection); then DeviceInfo, ListEntities, SubscribeStates, ping and
disconnect. Voice-assistant messages go to the :class:`VoiceBridge`, entity commands
to the surface.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message

from edgevoice.device.esphome import entities
from edgevoice.device.esphome.frames import (
    NOISE,
    PLAINTEXT,
    ApiFrameError,
    ApiKeyError,
    FrameCodec,
    NoiseCodec,
    PlaintextCodec,
    refusal_for,
)
from edgevoice.device.esphome.messages import decode, encode, make, name_of

if TYPE_CHECKING:
    from edgevoice.device.esphome.server import EsphomeSurface

_LOGGER = logging.getLogger(__name__)

API_VERSION = (1, 10)
HELLO_TIMEOUT_S = 10.0
_VOICE = frozenset({
    "VoiceAssistantEventResponse", "VoiceAssistantAudio", "VoiceAssistantResponse",
    "VoiceAssistantAnnounceRequest", "VoiceAssistantTimerEventResponse",
    "VoiceAssistantConfigurationRequest", "VoiceAssistantSetConfiguration",
})
_IGNORED = frozenset({
    "SubscribeLogsRequest", "SubscribeHomeassistantServicesRequest", "SubscribeHomeAssistantStatesRequest",
    "GetTimeResponse", "PingResponse", "SubscribeBluetoothLEAdvertisementsRequest",
    "SubscribeBluetoothConnectionsFreeRequest", "UnsubscribeBluetoothLEAdvertisementsRequest",
})


class ApiSession:
    """One connected client of :class:`EsphomeSurface`."""

    def __init__(self, surface: EsphomeSurface, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.surface = surface
        self.reader = reader
        self.writer = writer
        self.peer = str(writer.get_extra_info("peername"))
        self.codec: FrameCodec | None = None
        self.wants_states = False
        self._closing = False

    async def run(self) -> None:
        try:
            async with asyncio.timeout(HELLO_TIMEOUT_S):
                first = (await self.reader.readexactly(1))[0]
            codec = self._choose(first)
            if codec is None:
                return
            async with asyncio.timeout(HELLO_TIMEOUT_S):
                await codec.handshake(self.reader, self.writer)
            self.codec = codec
            while not self._closing:
                kind, data = await codec.read(self.reader)
                message = decode(kind, data)
                if message is None:
                    _LOGGER.debug("%s: message type %d is not known here; ignored", self.peer, kind)
                    continue
                self.send(self._answer(message))
        except ApiKeyError as err:
            _LOGGER.warning("refused API client %s: %s", self.peer, err)
        except ApiFrameError as err:
            _LOGGER.warning("API client %s: %s; closing", self.peer, err)
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            _LOGGER.debug("API client %s went away", self.peer)
        except Exception:  # a bug answering one client must not take the surface down
            _LOGGER.exception("API client %s: answering failed; closing its connection", self.peer)
        finally:
            self.surface.bridge.unsubscribe(self.send)
            await self.close()

    def _choose(self, first: int) -> FrameCodec | None:
        key = self.surface.psk
        if first == NOISE and key is not None:
            return NoiseCodec(key, self.surface.node_name, self.surface.mac)
        if first == PLAINTEXT and key is None:
            return PlaintextCodec()
        why = ("it needs encryption: give the client [esphome] encryption_key" if key is not None
               else "the device has no encryption key: connect without one")
        _LOGGER.warning("refused API client %s: %s", self.peer, why)
        self.writer.write(refusal_for(first))
        return None

    def send(self, messages: list[Message]) -> None:
        if not messages or self.codec is None or self.writer.is_closing():
            return
        self.writer.write(self.codec.encode(encode(messages)))

    async def close(self) -> None:
        self._closing = True
        self.surface.forget(self)
        if not self.writer.is_closing():
            self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    # --- answers -------------------------------------------------------------------------

    def _answer(self, message: Message) -> list[Message]:
        kind = name_of(message)
        handler: Callable[[Any], list[Message]] | None = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            return handler(message)
        if kind in _VOICE:
            return self.surface.bridge.handle(message)
        if kind in ("SwitchCommandRequest", "MediaPlayerCommandRequest"):
            self.surface.command(entities.command_of(message))
            return []
        if kind not in _IGNORED:
            _LOGGER.debug("%s: %s is not handled here", self.peer, kind)
        return []

    def _on_HelloRequest(self, m: Any) -> list[Message]:
        _LOGGER.info("API client %s connected (%s, API %d.%d)", self.peer, m.client_info,
                     m.api_version_major, m.api_version_minor)
        return [make("HelloResponse", api_version_major=API_VERSION[0], api_version_minor=API_VERSION[1],
                     server_info=f"edgevoice {self.surface.version}", name=self.surface.node_name)]

    def _on_AuthenticationRequest(self, m: Any) -> list[Message]:
        return [make("AuthenticationResponse", invalid_password=False)]

    def _on_ConnectRequest(self, m: Any) -> list[Message]:
        return [make("ConnectResponse", invalid_password=False)]

    def _on_DisconnectRequest(self, m: Any) -> list[Message]:
        self.send([make("DisconnectResponse")])
        self._closing = True
        return []

    def _on_PingRequest(self, m: Any) -> list[Message]:
        return [make("PingResponse")]

    def _on_DeviceInfoRequest(self, m: Any) -> list[Message]:
        return [self.surface.device_info()]

    def _on_ListEntitiesRequest(self, m: Any) -> list[Message]:
        return [*entities.list_entities(), make("ListEntitiesDoneResponse")]

    def _on_SubscribeStatesRequest(self, m: Any) -> list[Message]:
        self.wants_states = True
        return entities.states(self.surface.view())

    def _on_SubscribeVoiceAssistantRequest(self, m: Any) -> list[Message]:
        if m.subscribe:
            self.surface.bridge.subscribe(self.send, int(m.flags))
        else:
            self.surface.bridge.unsubscribe(self.send)
        return []


__all__ = ["API_VERSION", "ApiSession"]
