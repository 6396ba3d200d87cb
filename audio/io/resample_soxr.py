"""Sample-rate conversion at the edges, with a proper anti-aliasing filter (soxr).

:class:`StreamResampler` keeps filter state across calls, so a stream converted
period by period is the same as the whole signal converted at once (give or take
the filter's fixed delay), without clicks at period boundaries.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import soxr

from edgevoice.audio.frames import Pcm


def resample(pcm: Pcm, from_rate: int, to_rate: int, quality: str = "HQ") -> Pcm:
    """Convert a whole int16 signal from one rate to another."""
    if from_rate == to_rate:
        return pcm
    out = soxr.resample(pcm, from_rate, to_rate, quality=quality)
    return np.asarray(out, dtype=np.int16)


def resample_float(
    samples: npt.NDArray[np.float32], from_rate: int, to_rate: int, quality: str = "HQ"
) -> npt.NDArray[np.float32]:
    if from_rate == to_rate:
        return samples
    return np.asarray(soxr.resample(samples, from_rate, to_rate, quality=quality), np.float32)


class StreamResampler:
    """Convert a mono int16 stream chunk by chunk; state carries across chunks.

    Output length per call varies by a sample or two around ``len(x) * to / from``;
    callers that need fixed periods buffer the output (see :class:`FixedPeriods`).
    """

    def __init__(self, from_rate: int, to_rate: int, quality: str = "HQ") -> None:
        self.from_rate = from_rate
        self.to_rate = to_rate
        self._passthrough = from_rate == to_rate
        self._stream = None if self._passthrough else soxr.ResampleStream(
            from_rate, to_rate, 1, dtype="int16", quality=quality
        )

    def process(self, pcm: Pcm, last: bool = False) -> Pcm:
        if self._stream is None:
            return pcm
        return np.asarray(self._stream.resample_chunk(pcm, last=last), dtype=np.int16)

    def flush(self) -> Pcm:
        return self.process(np.zeros(0, dtype=np.int16), last=True)


class FixedPeriods:
    """Re-chunk a stream of variable-length pieces into fixed-size periods."""

    def __init__(self, period: int) -> None:
        self.period = period
        self._pending = np.zeros(0, dtype=np.int16)

    def push(self, pcm: Pcm) -> list[Pcm]:
        data = np.concatenate([self._pending, pcm]) if len(self._pending) else pcm
        count = len(data) // self.period
        periods = [data[i * self.period : (i + 1) * self.period] for i in range(count)]
        self._pending = data[count * self.period :].copy()
        return periods

    @property
    def pending(self) -> int:
        return len(self._pending)
