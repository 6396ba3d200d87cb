"""Real ALSA PCMs without a sound card, for pyalsaaudio tests.

alsa-lib's own plugins make real devices from a config file: ``file`` PCMs read a raw
file as capture (``infile``) and write playback to a raw file, over ``null``; ``plug``
on top fixes the format, rate and channels; ``asym`` joins a capture and a playback PCM
under one name. The PCMs take arguments, so one config serves every test::

    evmic:INFILE=/x/mic.raw,CHANNELS=4,RATE=48000,FORMAT=S32_LE
    evspk:OUTFILE=/x/spk.raw,CHANNELS=2,RATE=48000
    evduplex:INFILE=...,CHANNELS=...,RATE=...,FORMAT=...,OUTFILE=...,OUTCHANNELS=...,OUTRATE=...

The config goes in a temporary folder named by ``ALSA_CONFIG_PATH`` (after the system
``alsa.conf``). alsa-lib rereads its configuration when that list of files changes, so
setting the variable in-process before opening a PCM is enough; subprocesses inherit it.

Notes from measuring these devices (see also shared/NOTES.md): capture is bit-exact
only when the client asks for exactly the file's channels, format and rate; the devices
are not paced unless ``infile`` is a FIFO written at 1x by another process; the playback
file trails the writes by one buffer until the PCM is closed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

SYSTEM_CONFIG = "/usr/share/alsa/alsa.conf"

ASOUND_CONF = r"""
pcm.evmic {
  @args [ INFILE CHANNELS RATE FORMAT ]
  @args.INFILE { type string }
  @args.CHANNELS { type integer }
  @args.RATE { type integer }
  @args.FORMAT { type string default "S16_LE" }
  type plug
  slave {
    pcm { type file slave.pcm "null" file "/dev/null" infile $INFILE format "raw" }
    format $FORMAT rate $RATE channels $CHANNELS
  }
  hint.description "edgevoice test microphone (raw file)"
}
pcm.evspk {
  @args [ OUTFILE CHANNELS RATE ]
  @args.OUTFILE { type string }
  @args.CHANNELS { type integer default 1 }
  @args.RATE { type integer default 16000 }
  type plug
  slave {
    pcm { type file slave.pcm "null" file $OUTFILE format "raw" truncate true perm 0644 }
    format S16_LE rate $RATE channels $CHANNELS
  }
  hint.description "edgevoice test speaker (raw file)"
}
pcm.evduplex {
  @args [ INFILE CHANNELS RATE FORMAT OUTFILE OUTCHANNELS OUTRATE ]
  @args.INFILE { type string }
  @args.CHANNELS { type integer }
  @args.RATE { type integer }
  @args.FORMAT { type string default "S16_LE" }
  @args.OUTFILE { type string }
  @args.OUTCHANNELS { type integer default 1 }
  @args.OUTRATE { type integer default 16000 }
  type asym
  capture.pcm {
    type plug
    slave {
      pcm { type file slave.pcm "null" file "/dev/null" infile $INFILE format "raw" }
      format $FORMAT rate $RATE channels $CHANNELS
    }
  }
  playback.pcm {
    type plug
    slave {
      pcm { type file slave.pcm "null" file $OUTFILE format "raw" truncate true perm 0644 }
      format S16_LE rate $OUTRATE channels $OUTCHANNELS
    }
  }
  hint.description "edgevoice test duplex device (raw files)"
}
pcm.evnull {
  type plug
  slave.pcm "null"
  hint.description "edgevoice test null device"
}
pcm.evarray {
  type multi
  slaves.a { pcm "null" channels 2 }
  slaves.b { pcm "null" channels 2 }
  bindings.0 { slave a channel 0 }
  bindings.1 { slave a channel 1 }
  bindings.2 { slave b channel 0 }
  bindings.3 { slave b channel 1 }
  hint.description "edgevoice test 4-channel array that accepts nothing else"
}
"""

FORMAT_DTYPES = {"S16_LE": "<i2", "S32_LE": "<i4"}


def write_alsa_config(folder: Path) -> str:
    """Write the test PCMs to ``folder/asound.conf``; returns the ALSA_CONFIG_PATH value."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "asound.conf"
    path.write_text(ASOUND_CONF)
    return f"{SYSTEM_CONFIG}:{path}"


@dataclass(frozen=True)
class AlsaDevices:
    """The test PCMs, and where their files go."""

    folder: Path

    def mic(self, infile: Path | str, channels: int, rate: int = 16000, fmt: str = "S16_LE") -> str:
        return f"evmic:INFILE={infile},CHANNELS={channels},RATE={rate},FORMAT={fmt}"

    def speaker(self, outfile: Path | str, channels: int = 1, rate: int = 16000) -> str:
        return f"evspk:OUTFILE={outfile},CHANNELS={channels},RATE={rate}"

    def duplex(self, infile: Path | str, channels: int, rate: int, fmt: str, outfile: Path | str, *,
               out_channels: int = 1, out_rate: int = 16000) -> str:
        return (f"evduplex:INFILE={infile},CHANNELS={channels},RATE={rate},FORMAT={fmt},"
                f"OUTFILE={outfile},OUTCHANNELS={out_channels},OUTRATE={out_rate}")

    null = "evnull"
    four_channels_only = "evarray"


def write_raw(path: Path, frames: np.ndarray, fmt: str = "S16_LE") -> Path:
    """Write interleaved frames ``(n, channels)`` as a raw file in ``fmt``."""
    np.ascontiguousarray(frames).astype(FORMAT_DTYPES[fmt]).tofile(path)
    return path


def ramp_channels(frames: int, channels: int, fmt: str = "S16_LE") -> np.ndarray:
    """Distinct, recognisable content per channel: channel c carries c*1000 + n (wrapped);
    in S32 with low bits that a 16-bit reduction drops."""
    n = np.arange(frames)[:, None]
    c = np.arange(channels)[None, :]
    data = ((n * 7 + c * 1000) % 60000 - 30000).astype(np.int64)
    if fmt == "S32_LE":
        data = data << 16 | (n * 13 % 65536)
    return data


def read_raw(path: Path, channels: int = 1, fmt: str = "S16_LE") -> np.ndarray:
    data = np.fromfile(path, dtype=FORMAT_DTYPES[fmt])
    return data.reshape(-1, channels) if channels > 1 else data


def install_alsa_devices(folder: Path, monkeypatch: pytest.MonkeyPatch) -> AlsaDevices:
    """Make the test PCMs visible to alsa-lib in this process and in subprocesses.

    Use from a fixture in the test module (pytest only finds fixtures defined or
    imported there)::

        @pytest.fixture
        def alsa_devices(tmp_path, monkeypatch):
            return install_alsa_devices(tmp_path, monkeypatch)
    """
    monkeypatch.setenv("ALSA_CONFIG_PATH", write_alsa_config(folder / "alsa"))
    return AlsaDevices(folder)


@pytest.fixture
def alsa_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AlsaDevices]:
    """The test PCMs (import this fixture into a test module to use it)."""
    yield install_alsa_devices(tmp_path, monkeypatch)


FIFO_WRITER = r"""
import array, os, signal, sys, time
fifo, source, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
period_s = float(sys.argv[4])
if int(sys.argv[5]) > 0:  # stand in for a card's clock: run ahead of everything else where allowed
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(sys.argv[5])))
    except OSError:
        pass
timing = sys.argv[6] if len(sys.argv) > 6 else ""
late_us = array.array("i")  # per chunk: how late this writer itself was ready to write it

def dump(*_):
    if timing:
        with open(timing + ".part", "wb") as f:
            late_us.tofile(f)
        os.replace(timing + ".part", timing)
    os._exit(0)

signal.signal(signal.SIGTERM, dump)
data = open(source, "rb").read()
try:
    with open(fifo, "wb", buffering=0) as out:   # blocks until the PCM opens the FIFO
        start = time.monotonic()
        for index in range(len(data) // chunk):
            due = start + index * period_s
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            late_us.append(max(0, int((time.monotonic() - due) * 1e6)))
            out.write(data[index * chunk : (index + 1) * chunk])
except BrokenPipeError:  # the reader closed the PCM: the run is over
    pass
dump()
"""


def start_fifo_writer(fifo: Path, source: Path, chunk_bytes: int, period_s: float, *,
                      rt_priority: int = 0, timing: Path | None = None) -> subprocess.Popen[bytes]:
    """A separate process that writes ``source`` into ``fifo`` at real time, one chunk per
    period. Start it before opening the PCM: opening a FIFO capture blocks, holding the GIL.
    ``rt_priority`` > 0: the writer asks for SCHED_FIFO (where allowed), so on a loaded
    machine it keeps time like a card's clock and lateness measured by the reader is the
    reader's own. ``timing``: when the writer ends or gets SIGTERM, it leaves there how late
    it was itself ready to write each chunk (int32 microseconds; :func:`writer_lateness_ms`),
    so a reader's late period can be told apart from one its clock stand-in caused."""
    if not fifo.exists():
        os.mkfifo(fifo)
    extra = [str(timing)] if timing is not None else []
    return subprocess.Popen([sys.executable, "-c", FIFO_WRITER, str(fifo), str(source),
                             str(chunk_bytes), str(period_s), str(rt_priority), *extra])


def writer_lateness_ms(writer: subprocess.Popen[bytes], timing: Path) -> np.ndarray:
    """Stop a writer started with ``timing`` and read how late it was for each chunk (ms)."""
    writer.terminate()
    writer.wait(10)
    return np.fromfile(timing, dtype=np.int32).astype(np.float64) / 1000.0 if timing.exists() else np.zeros(0)
