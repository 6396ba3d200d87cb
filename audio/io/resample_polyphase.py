"""A low-latency streaming resampler for the real-time path (ALSA at the edges).

Why not soxr here: ``soxr.ResampleStream`` (HQ, MQ, LQ) works in internal blocks, so
fed one 10 ms period at a time it returns nothing for two or three periods and then
30 ms at once (measured with python-soxr 1.1: 16 kHz→48 kHz gives 0, 0, 1468, 0, 0,
1468 ... samples). A duplex loop that writes one period per read cannot live with that:
the playback buffer starves, and capture periods arrive in bursts. Its ``QQ`` mode is
smooth but is cubic interpolation without an anti-aliasing filter.

This is a polyphase FIR (Kaiser-windowed sinc) for any rational ratio. Every input
sample produces its outputs at once: 480 samples at 48 kHz give exactly 160 at 16 kHz,
441 at 44.1 kHz give exactly 160, 160 at 16 kHz give exactly 480 at 48 kHz. The delay
is half the filter (about 1.5 ms). The pass band ends ``transition`` x the lower rate
below its Nyquist frequency (6.4 kHz at 16 kHz with the default 0.1; -6 dB at 7.2 kHz)
and everything above the lower Nyquist frequency is attenuated by ``attenuation_db``
(80 dB by default), so nothing aliases.

API (the same shape as :class:`edgevoice.audio.io.resample_soxr.StreamResampler`)::

    resampler = PolyphaseResampler(48000, 16000)
    out = resampler.process(pcm_int16)        # any length in, what it yields out
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from edgevoice.audio.frames import Pcm

Float32 = npt.NDArray[np.float32]


def design_table(up: int, from_rate: int, to_rate: int, *, attenuation_db: float,
                 transition: float) -> Float32:
    """The polyphase table: ``table[phase, i]`` multiplies input ``x[n - K + 1 + i]``."""
    base = min(from_rate, to_rate)
    width = transition * base  # Hz between the pass band edge and the lower Nyquist
    proto_rate = from_rate * up
    taps_per_phase = max(4, math.ceil((attenuation_db - 8.0) * from_rate / (2.285 * 2 * math.pi * width)))
    length = taps_per_phase * up
    cutoff = (0.5 * base - 0.5 * width) / proto_rate  # cycles per prototype sample (-6 dB)
    beta = 0.1102 * (attenuation_db - 8.7) if attenuation_db > 50 else 0.5842 * (
        attenuation_db - 21) ** 0.4 + 0.07886 * (attenuation_db - 21)
    n = np.arange(length) - (length - 1) / 2.0
    proto = 2 * cutoff * np.sinc(2 * cutoff * n) * np.kaiser(length, beta)
    proto *= up / proto.sum()
    # table[p, k] = proto[p + k*up] multiplies x[n_j - k]; store it reversed in k.
    table = proto.reshape(taps_per_phase, up).T[:, ::-1]
    out: Float32 = np.ascontiguousarray(table, dtype=np.float32)
    return out


def _to_int16(samples: Float32) -> Pcm:
    """Round and saturate in place with plain ufuncs (np.clip's wrapper costs more here)."""
    np.rint(samples, out=samples)
    np.maximum(samples, -32768.0, out=samples)
    np.minimum(samples, 32767.0, out=samples)
    out: Pcm = samples.astype(np.int16)
    return out


class PolyphaseResampler:
    """Streaming rational-ratio resampler for int16, mono (1-D) or several channels
    (``(frames, channels)``, converted together), with a fixed, small delay."""

    def __init__(self, from_rate: int, to_rate: int, *, channels: int = 1,
                 attenuation_db: float = 80.0, transition: float = 0.1) -> None:
        self.from_rate = from_rate
        self.to_rate = to_rate
        self.channels = channels
        self.passthrough = from_rate == to_rate
        g = math.gcd(from_rate, to_rate)
        self.up = to_rate // g
        self.down = from_rate // g
        self._table = (np.zeros((1, 1), np.float32) if self.passthrough else
                       design_table(self.up, from_rate, to_rate, attenuation_db=attenuation_db,
                                    transition=transition))
        self.taps = self._table.shape[1]
        self._table_t = np.ascontiguousarray(self._table.T)
        self._history = np.zeros((self.taps - 1, channels), dtype=np.float32)
        self._consumed = 0  # input frames seen so far
        self._next = 0  # index of the next output frame

    @property
    def delay_s(self) -> float:
        """The filter's group delay in seconds."""
        return 0.0 if self.passthrough else (self.taps * self.up - 1) / 2.0 / (self.from_rate * self.up)

    def process(self, pcm: npt.NDArray[Any], last: bool = False) -> Pcm:
        """Resample one chunk of int16 (or float32 on the int16 scale); state carries to
        the next call. Returns int16. ``last`` is accepted for interface compatibility
        (nothing is held back beyond the filter delay)."""
        if self.passthrough:
            if pcm.dtype == np.int16:
                return pcm
            return _to_int16(np.asarray(pcm, dtype=np.float32).copy())
        return _to_int16(self._resample(pcm))

    def process_float(self, pcm: npt.NDArray[Any]) -> Float32:
        """:meth:`process` without the final rounding to int16: float32 on the int16 scale,
        so what a 32-bit capture has below 16 bits survives (a microphone array's channels,
        which a beamformer sums). Rounded and saturated, it is what :meth:`process` returns."""
        if self.passthrough:
            passed: Float32 = np.asarray(pcm, dtype=np.float32)
            return passed
        return self._resample(pcm)

    def _resample(self, pcm: npt.NDArray[Any]) -> Float32:
        mono = pcm.ndim == 1
        chunk = np.asarray(pcm, dtype=np.float32).reshape(len(pcm), self.channels)
        before = self._consumed
        after = before + len(chunk)
        buffer = np.concatenate([self._history, chunk])
        self._history = buffer[len(buffer) - (self.taps - 1):]
        self._consumed = after
        start = self._next
        end = (after * self.up + self.down - 1) // self.down  # first output needing later input
        count = end - start
        if count <= 0:
            return np.zeros(0 if mono else (0, self.channels), dtype=np.float32)
        self._next = end
        if self.channels == 1:
            out = self._filter(buffer, 0, start, end, before)
        else:
            out = np.empty((count, self.channels), dtype=np.float32)
            for channel in range(self.channels):
                out[:, channel] = self._filter(buffer, channel, start, end, before)
        return out[:, 0] if mono and out.ndim == 2 else out

    def _filter(self, buffer: Float32, channel: int, start: int, end: int, before: int) -> Float32:
        step = buffer.strides[0]
        base = channel * buffer.itemsize
        count = end - start
        if self.up == 1:
            # Decimation: output windows are `down` inputs apart, one strided view.
            row = start * self.down - before
            view = np.ndarray((count, self.taps), np.float32, buffer=buffer, offset=base + row * step,
                              strides=(self.down * step, step))
            decimated: Float32 = np.ascontiguousarray(view) @ self._table[0]
            return decimated
        first = start * self.down // self.up - before
        last = (end - 1) * self.down // self.up - before
        if self.up <= 8:
            # Few phases: filter every input window with every phase in one product,
            # then pick (window, phase) per output.
            view = np.ndarray((last - first + 1, self.taps), np.float32, buffer=buffer,
                              offset=base + first * step, strides=(step, step))
            every = np.ascontiguousarray(view) @ self._table_t
            if self.down == 1:
                interpolated: Float32 = every.reshape(-1)[start % self.up : start % self.up + count]
                return interpolated
            position = np.arange(start, end, dtype=np.int64) * self.down
            picked: Float32 = every[position // self.up - before - first, position % self.up]
            return picked
        position = np.arange(start, end, dtype=np.int64) * self.down
        windows = np.ndarray((last + 1, self.taps), np.float32, buffer=buffer, offset=base,
                             strides=(step, step))
        gathered: Float32 = np.einsum("jk,jk->j", windows[position // self.up - before],
                                      self._table[position % self.up])
        return gathered

    def flush(self) -> Pcm:
        return np.zeros(0 if self.channels == 1 else (0, self.channels), dtype=np.int16)
