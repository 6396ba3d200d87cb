"""The WAV backend: the microphone from a file, the speaker to a file.

API::

    backend = WavFileBackend(period_samples=160, input_path="in.wav", output_path="out.wav",
                             realtime=False, at_end="stop")

The input (any PCM WAV; mixed to mono and converted to 16 kHz) is read one period per
:meth:`read`; at its end :meth:`read` raises :class:`EndOfInput` (``at_end="stop"``) or
returns silence for ever (``at_end="silence"``). No input path: silence. The last
partial period is padded with zeros. Whatever the duplex loop writes goes to
``output_path`` (16 kHz mono int16), complete once the backend is closed; no output
path: discarded. ``realtime`` paces reads at 1x; otherwise the backend is unpaced and
the duplex loop runs on virtual time (nothing dropped).
"""

from __future__ import annotations

import logging
import time
import wave
from pathlib import Path

import numpy as np

from edgevoice.audio.errors import AudioError, EndOfInput
from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.io.backend import AudioBackend, Captured
from edgevoice.audio.io.wav import read_wav

_LOGGER = logging.getLogger(__name__)

AT_END_CHOICES = ("stop", "silence")


class WavFileBackend(AudioBackend):
    """Microphone from a WAV file, speaker to a WAV file."""

    def __init__(
        self,
        period_samples: int,
        *,
        input_path: str | Path | None = None,
        output_path: str | Path | None = None,
        realtime: bool = False,
        at_end: str = "stop",
    ) -> None:
        super().__init__(period_samples)
        if at_end not in AT_END_CHOICES:
            raise ValueError(f"at_end must be one of {AT_END_CHOICES}, not {at_end!r}")
        self.input_path = Path(input_path) if input_path else None
        self.output_path = Path(output_path) if output_path else None
        self.realtime = bool(realtime)
        self.at_end = at_end
        self._input: Pcm = np.zeros(0, np.int16)
        self._position = 0
        self._writer: wave.Wave_write | None = None
        self._wall_start: float | None = None
        self._open = False

    @property
    def name(self) -> str:
        return f"wav:{self.input_path or '-'}"

    @property
    def paced(self) -> bool:
        return self.realtime

    @property
    def position_s(self) -> float:
        """Seconds of input read so far."""
        return self._position / SAMPLE_RATE

    def open(self) -> None:
        if self._open:
            return
        if self.input_path is not None:
            self._input, _ = read_wav(self.input_path)
        self._position = 0
        self._wall_start = None
        if self.output_path is not None:
            try:
                self.output_path.parent.mkdir(parents=True, exist_ok=True)
                writer = wave.open(str(self.output_path), "wb")  # noqa: SIM115 - closed in close()
            except OSError as err:
                raise AudioError(f"{self.output_path}: cannot write the speaker output "
                                 f"({err.strerror or err})") from err
            writer.setnchannels(1)
            writer.setsampwidth(2)
            writer.setframerate(SAMPLE_RATE)
            self._writer = writer
        self._open = True

    def read(self) -> Captured:
        if not self._open:
            raise AudioError("the WAV backend is not open; call open() first")
        period = self.period_samples
        remaining = len(self._input) - self._position
        if remaining <= 0 and self.at_end == "stop" and self.input_path is not None:
            raise EndOfInput(f"{self.input_path} ended after {self.position_s:.2f} s")
        self._pace()
        out = np.zeros(period, np.int16)
        if remaining > 0:
            take = min(period, remaining)
            out[:take] = self._input[self._position : self._position + take]
        self._position += period
        return Captured(out)

    def write(self, pcm: Pcm) -> None:
        if self._writer is not None:
            self._writer.writeframes(np.asarray(pcm, dtype="<i2").tobytes())

    def close(self) -> None:
        self._open = False
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _pace(self) -> None:
        if not self.realtime:
            return
        now = time.monotonic()
        if self._wall_start is None:
            self._wall_start = now - self._position / SAMPLE_RATE
        due = self._wall_start + (self._position + self.period_samples) / SAMPLE_RATE
        if due > now:
            time.sleep(due - now)
