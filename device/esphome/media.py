"""Media Home Assistant asks the device to play: fetched over HTTP, decoded to 16 kHz mono.

HA hands the device URLs (a TTS reply's ``url`` when it does not stream the audio,
announcements, ``media_player.play_media``). WAV (PCM 8/16/24/32-bit, any rate and
channel count) is decoded here; FLAC, MP3 and Ogg need ``soundfile`` (libsndfile)
where it is installed. Everything becomes 16 kHz mono int16 (soxr), the speaker's
format, in pieces of :data:`CHUNK_S` so a barge-in lands between them.
"""

from __future__ import annotations

import io
import logging
import time
import wave
from collections.abc import AsyncIterator

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.speaking.tts import TtsAudio
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)

CHUNK_S = 0.5
MAX_BYTES = 32 * 1024 * 1024
FETCH_TIMEOUT_S = 30.0


class MediaError(EdgeVoiceError):
    """The media could not be fetched or decoded; the message says which and why."""

    code = "media_failed"


def decode(data: bytes, hint: str = "") -> Pcm:
    """``data`` (a whole file) as 16 kHz mono int16."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        samples, rate = _decode_wav(data)
    else:
        samples, rate = _decode_other(data, hint)
    return to_device_rate(samples, rate)


def _decode_wav(data: bytes) -> tuple[np.ndarray, int]:
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            width, channels, rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
            raw = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as err:
        raise MediaError(f"the WAV file is not PCM audio ({err})") from err
    if width == 1:
        samples = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        samples = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        value = (b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16))
        value = np.where(value >= 1 << 23, value - (1 << 24), value)
        samples = value.astype(np.float32) / float(1 << 23)
    elif width == 4:
        samples = np.frombuffer(raw, "<i4").astype(np.float32) / float(1 << 31)
    else:
        raise MediaError(f"a WAV file with {width}-byte samples is not supported")
    if channels > 1:
        samples = samples[: len(samples) // channels * channels].reshape(-1, channels).mean(axis=1)
    return samples, rate


def _decode_other(data: bytes, hint: str) -> tuple[np.ndarray, int]:
    try:
        import soundfile
    except ImportError as err:
        raise MediaError(
            f"cannot decode {hint or 'this media'}: only WAV is built in; install 'soundfile' "
            "(libsndfile) for FLAC, MP3 and Ogg, or have Home Assistant send WAV") from err
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except Exception as err:
        raise MediaError(f"cannot decode {hint or 'this media'}: {err}") from err
    return samples.mean(axis=1), int(rate)


def to_device_rate(samples: np.ndarray, rate: int) -> Pcm:
    if rate != SAMPLE_RATE and len(samples):
        import soxr

        samples = soxr.resample(samples, rate, SAMPLE_RATE)
    return np.clip(np.round(samples * 32767.0), -32768, 32767).astype(np.int16)


def pcm16(data: bytes) -> Pcm:
    """Raw little-endian 16 kHz mono int16 bytes (what HA streams) as samples."""
    return np.frombuffer(data[: len(data) // 2 * 2], "<i2").astype(np.int16)


def chunks(pcm: Pcm, text: str = "") -> list[TtsAudio]:
    """``pcm`` in pieces the speaker queues one by one; the first carries the text."""
    now = time.monotonic()
    step = int(CHUNK_S * SAMPLE_RATE)
    pieces = [pcm[i:i + step] for i in range(0, len(pcm), step)] or [pcm[:0]]
    return [TtsAudio(text if i == 0 else "", piece, (), now, now) for i, piece in enumerate(pieces)]


async def fetch(url: str) -> bytes:
    """The bytes at ``url`` (HA's own HTTP server, normally)."""
    import aiohttp

    try:
        timeout = aiohttp.ClientTimeout(total=FETCH_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as response:
            if response.status != 200:
                raise MediaError(f"fetching {url} answered HTTP {response.status}")
            data = await response.content.read(MAX_BYTES + 1)
    except aiohttp.ClientError as err:
        raise MediaError(f"fetching {url} failed: {err}") from err
    except TimeoutError as err:
        raise MediaError(f"fetching {url} took longer than {FETCH_TIMEOUT_S:.0f} s") from err
    if len(data) > MAX_BYTES:
        raise MediaError(f"{url} is larger than {MAX_BYTES // (1024 * 1024)} MB")
    return data


async def fetch_audio(url: str, text: str = "") -> AsyncIterator[TtsAudio]:
    """Fetch and decode ``url``; yield it in speaker-sized pieces."""
    data = await fetch(url)
    pcm = decode(data, url.rsplit("/", 1)[-1])
    _LOGGER.debug("playing %s: %.1f s", url, len(pcm) / SAMPLE_RATE)
    for piece in chunks(pcm, text):
        yield piece


__all__ = ["MediaError", "chunks", "decode", "fetch", "fetch_audio", "pcm16", "to_device_rate"]
