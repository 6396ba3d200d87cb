"""The ESPHome native API's framing, device side: plaintext and Noise.

Plaintext frames are ``0x00, varint length, varint type, payload``. Noise frames are
``0x01, 2-byte length, payload``; after the handshake each payload is an encrypted
``2-byte type, 2-byte length, message``. The handshake is Noise_NNpsk0_25519_ChaChaPoly_SHA256
with the prologue ``NoiseAPIInit\\0\\0``; the device is the responder.

The ciphers, the Noise backend, the protocol name and the PSK decoding are
aioesphomeapi's own (what Home Assistant's client uses on the other end); this module
only plays the other role. Reading is over an :class:`asyncio.StreamReader`, writing
returns the bytes to put on the wire.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)

PLAINTEXT = 0x00
NOISE = 0x01
NOISE_PROLOGUE = b"NoiseAPIInit\x00\x00"
MAX_FRAME = 1 << 16


class ApiFrameError(EdgeVoiceError):
    """The client broke the framing or the handshake: the connection is closed."""

    code = "esphome_frame_invalid"


class ApiKeyError(ApiFrameError):
    """The client's Noise key is not ours."""

    code = "esphome_key_mismatch"


class FrameCodec(Protocol):
    """One connection's framing after the first byte chose it."""

    async def handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None: ...

    async def read(self, reader: asyncio.StreamReader) -> tuple[int, bytes]: ...

    def encode(self, packets: list[tuple[int, bytes]]) -> bytes: ...


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


async def _read_varint(reader: asyncio.StreamReader) -> int:
    result = 0
    for shift in range(0, 35, 7):
        byte = (await reader.readexactly(1))[0]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result
    raise ApiFrameError("a varint longer than 5 bytes")


class PlaintextCodec:
    """Frames without encryption (``[esphome] encryption_key`` empty)."""

    def __init__(self) -> None:
        self._first = True

    async def handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        return None

    async def read(self, reader: asyncio.StreamReader) -> tuple[int, bytes]:
        if self._first:
            self._first = False  # the session has consumed the indicator byte
        else:
            indicator = (await reader.readexactly(1))[0]
            if indicator != PLAINTEXT:
                raise ApiFrameError(f"expected a plaintext frame, got indicator {indicator:#x}")
        length = await _read_varint(reader)
        msg_type = await _read_varint(reader)
        if length > MAX_FRAME:
            raise ApiFrameError(f"a {length}-byte message is too long")
        return msg_type, await reader.readexactly(length) if length else b""

    def encode(self, packets: list[tuple[int, bytes]]) -> bytes:
        return b"".join(bytes([PLAINTEXT]) + _varint(len(data)) + _varint(kind) + data
                        for kind, data in packets)


class NoiseCodec:
    """Noise_NNpsk0 with the device's pre-shared key; the device is the responder."""

    def __init__(self, psk: bytes, name: str, mac: str) -> None:
        from aioesphomeapi._frame_helper.noise_encryption import (
            ESPHOME_NOISE_BACKEND,
            NOISE_PROTOCOL_NAME,
        )
        from noise.connection import NoiseConnection

        self._name = name
        self._mac = mac
        self._proto = NoiseConnection.from_name(NOISE_PROTOCOL_NAME, backend=ESPHOME_NOISE_BACKEND)
        self._proto.set_as_responder()
        self._proto.set_psks(psk)
        self._proto.set_prologue(NOISE_PROLOGUE)
        self._proto.start_handshake()
        self._encrypt: object | None = None
        self._decrypt: object | None = None
        self._first = True

    async def _frame(self, reader: asyncio.StreamReader) -> bytes:
        if self._first:
            self._first = False
        else:
            indicator = (await reader.readexactly(1))[0]
            if indicator != NOISE:
                raise ApiFrameError(f"expected a Noise frame, got indicator {indicator:#x}")
        size = await reader.readexactly(2)
        return await reader.readexactly((size[0] << 8) | size[1])

    @staticmethod
    def _wrap(payload: bytes) -> bytes:
        return bytes((NOISE, (len(payload) >> 8) & 0xFF, len(payload) & 0xFF)) + payload

    async def handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from aioesphomeapi._frame_helper.noise_encryption import DecryptCipher, EncryptCipher
        from cryptography.exceptions import InvalidTag

        await self._frame(reader)  # the client's hello (empty)
        # Server hello: the chosen protocol (1), then the node name and the MAC, each 0-ended.
        hello = b"\x01" + self._name.encode() + b"\x00" + self._mac.encode() + b"\x00"
        writer.write(self._wrap(hello))
        message = await self._frame(reader)
        if not message or message[0] != 0:
            raise ApiFrameError("the Noise handshake message has no 0 preamble")
        try:
            self._proto.read_message(message[1:])
        except InvalidTag as err:
            # What ESPHome firmware answers a wrong key with; aioesphomeapi reports it as
            # InvalidEncryptionKeyAPIError.
            writer.write(self._wrap(b"\x01Handshake MAC failure"))
            await writer.drain()
            raise ApiKeyError("a client's encryption key does not match [esphome] encryption_key") from err
        except Exception as err:
            writer.write(self._wrap(b"\x01Handshake error"))
            await writer.drain()
            raise ApiFrameError(f"the Noise handshake failed: {err}") from err
        writer.write(self._wrap(b"\x00" + bytes(self._proto.write_message())))
        await writer.drain()
        state = self._proto.noise_protocol
        self._encrypt = EncryptCipher(state.cipher_state_encrypt)
        self._decrypt = DecryptCipher(state.cipher_state_decrypt)

    async def read(self, reader: asyncio.StreamReader) -> tuple[int, bytes]:
        from cryptography.exceptions import InvalidTag

        frame = await self._frame(reader)
        assert self._decrypt is not None, "read before the handshake"
        try:
            message: bytes = self._decrypt.decrypt(frame)  # type: ignore[attr-defined]
        except InvalidTag as err:
            raise ApiFrameError("a Noise frame failed to decrypt") from err
        if len(message) < 4:
            raise ApiFrameError("a Noise message shorter than its header")
        msg_type = (message[0] << 8) | message[1]
        length = (message[2] << 8) | message[3]
        return msg_type, message[4:4 + length]

    def encode(self, packets: list[tuple[int, bytes]]) -> bytes:
        assert self._encrypt is not None, "write before the handshake"
        out = []
        for kind, data in packets:
            header = bytes(((kind >> 8) & 0xFF, kind & 0xFF, (len(data) >> 8) & 0xFF, len(data) & 0xFF))
            out.append(self._wrap(self._encrypt.encrypt(header + data)))  # type: ignore[attr-defined]
        return b"".join(out)


def refusal_for(indicator: int) -> bytes:
    """What to answer a client that spoke the other framing, so its library says why.

    A plaintext client of an encrypted device sees a Noise frame (aioesphomeapi:
    RequiresEncryptionAPIError); a Noise client of a plaintext device sees a plaintext
    frame (EncryptionPlaintextAPIError)."""
    if indicator == PLAINTEXT:
        return bytes((NOISE, 0, 1)) + b"\x01"
    return PlaintextCodec().encode([(5, b"")])  # a DisconnectRequest


__all__ = ["ApiFrameError", "ApiKeyError", "FrameCodec", "NoiseCodec", "PlaintextCodec", "refusal_for"]
