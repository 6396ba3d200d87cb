"""WAV files: read any PCM WAV as 16 kHz (or native) mono int16, write int16 WAVs."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from edgevoice.audio.errors import AudioError
from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.io.resample_soxr import resample


class WavFormatError(AudioError, ValueError):
    code = "wav_format"


def read_wav(path: str | Path, *, rate: int | None = SAMPLE_RATE, mono: bool = True) -> tuple[Pcm, int]:
    """Read a PCM WAV (8/16/24/32-bit). Channels are averaged when ``mono``; the signal is
    converted to ``rate`` unless ``rate`` is None. Returns ``(samples, rate)``; with
    several channels and ``mono=False`` the array is (frames, channels)."""
    try:
        with wave.open(str(path), "rb") as handle:
            channels = handle.getnchannels()
            width = handle.getsampwidth()
            native = handle.getframerate()
            raw = handle.readframes(handle.getnframes())
    except (wave.Error, EOFError) as err:
        raise WavFormatError(f"{path}: not a PCM WAV file ({err}); convert it with "
                             f"'sox {path} -b 16 out.wav'") from err
    except OSError as err:
        raise AudioError(f"{path}: cannot read ({err.strerror or err})") from err
    if width == 1:
        data = (np.frombuffer(raw, np.uint8).astype(np.int16) - 128) << 8
    elif width == 2:
        data = np.frombuffer(raw, "<i2").astype(np.int16)
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        data = (((b[:, 2] << 24) | (b[:, 1] << 16) | (b[:, 0] << 8)) >> 16).astype(np.int16)
    elif width == 4:
        data = (np.frombuffer(raw, "<i4") >> 16).astype(np.int16)
    else:
        raise WavFormatError(f"{path}: unsupported sample width {width} bytes")
    frames = data.reshape(-1, channels)
    if mono:
        out = frames[:, 0] if channels == 1 else frames.astype(np.int32).mean(axis=1).astype(np.int16)
        if rate is not None and rate != native:
            out = resample(np.ascontiguousarray(out), native, rate)
            native = rate
        return np.ascontiguousarray(out), native
    if rate is not None and rate != native:
        raise WavFormatError("resampling multi-channel WAVs is not supported; read mono")
    return frames, native


def write_wav(path: str | Path, pcm: Pcm, rate: int = SAMPLE_RATE) -> None:
    """Write int16 samples (1-D mono or (frames, channels)) as a WAV file."""
    data = np.asarray(pcm, dtype=np.int16)
    channels = 1 if data.ndim == 1 else data.shape[1]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(channels)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(data.astype("<i2").tobytes())
