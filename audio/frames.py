"""Frames: the units every audio stage passes around.

After the front end everything is 16 kHz mono int16 (float32 inside DSP), in fixed
periods of 10 or 20 ms. Rates and formats are converted only at the edges
(the ALSA backend, TTS output, WAV files).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16000
"""The front end's rate: everything between the backends and the engines runs at it."""

Pcm = npt.NDArray[np.int16]
Samples = npt.NDArray[np.float32]
MicPeriods = npt.NDArray[np.int16] | npt.NDArray[np.float32]
"""One period of every mic of an array: (samples, mics), int16 or float32 at int16 scale."""


def period_samples(period_ms: int, rate: int = SAMPLE_RATE) -> int:
    return rate * period_ms // 1000


def silence(samples: int) -> Pcm:
    return np.zeros(samples, dtype=np.int16)


def unchanging(pcm: Pcm) -> bool:
    """The array owns its data and is read-only, so its contents cannot change: what was
    computed from it may be kept and found again by identity (the speaker's idle silence)."""
    return pcm.base is None and not pcm.flags.writeable


def to_float(pcm: Pcm) -> Samples:
    """int16 → float32 in [-1, 1)."""
    return pcm.astype(np.float32) * np.float32(1.0 / 32768.0)


def to_int16(samples: npt.NDArray[np.floating]) -> Pcm:
    """float → int16 with clipping (never wraps around)."""
    scaled = np.clip(np.rint(samples * 32768.0), -32768, 32767)
    out: Pcm = scaled.astype(np.int16)
    return out


def dbfs(pcm: Pcm | Samples) -> float:
    """RMS level relative to full scale; -120 for digital silence."""
    if len(pcm) == 0:
        return -120.0
    data = pcm.astype(np.float64)
    mean_square = float(np.dot(data, data)) / len(data)
    if pcm.dtype == np.int16:
        mean_square /= 32768.0 * 32768.0
    return max(-120.0, 10.0 * math.log10(mean_square)) if mean_square > 0 else -120.0


@dataclass(frozen=True, slots=True)
class DuplexFrame:
    """One period of the duplex loop: what the microphone heard and, on the same clock,
    what the speaker was sent (the echo canceller's reference).

    ``index`` counts periods since the stream started; ``index * len(mic)`` is the
    audio clock in samples at 16 kHz, which every timestamp downstream uses.
    """

    index: int
    mic: Pcm
    reference: Pcm
    # An xrun just before this period: the echo path's alignment may have moved (the
    # front end re-aligns its echo canceller).
    discontinuity: bool = False
    # A microphone array's channels, (samples, mics); ``mic`` is then their average.
    mics: MicPeriods | None = None

    @property
    def start_s(self) -> float:
        return self.index * len(self.mic) / SAMPLE_RATE

    @property
    def end_s(self) -> float:
        return (self.index + 1) * len(self.mic) / SAMPLE_RATE
