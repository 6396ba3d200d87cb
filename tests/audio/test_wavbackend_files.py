"""The WAV backend and building backends from the config sections."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from edgevoice.audio.errors import EndOfInput
from edgevoice.audio.io.duplex import DuplexLoop
from edgevoice.audio.io.room import SimulatedRoom
from edgevoice.audio.io.wav import read_wav, write_wav
from edgevoice.audio.io.wav_backend import WavFileBackend
from edgevoice.audio.speaking.playback import Speaker
from edgevoice.device.assembly.audio_io import duplex_options, open_backend, parse_talkers
from edgevoice.device.config import ConfigError, build_config

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

P = 160


def _signal(n: int) -> np.ndarray:
    return (np.arange(n) % 2000 - 1000).astype(np.int16)


def test_mic_from_file_then_end_of_input_and_speaker_to_file(tmp_path: Path) -> None:
    source = _signal(5 * P + 40)
    write_wav(tmp_path / "in.wav", source)
    backend = WavFileBackend(P, input_path=tmp_path / "in.wav", output_path=tmp_path / "out.wav")
    assert not backend.paced
    got = []
    with backend:
        while True:
            try:
                got.append(backend.read().mic)
            except EndOfInput:
                break
            backend.write(np.full(P, len(got), np.int16))
    mic = np.concatenate(got)
    assert len(mic) == 6 * P
    assert np.array_equal(mic[: len(source)], source) and not np.any(mic[len(source) :])
    out, rate = read_wav(tmp_path / "out.wav", rate=None)
    assert rate == 16000 and np.array_equal(out, np.repeat(np.arange(1, 7), P).astype(np.int16))


def test_silence_after_the_end_when_configured(tmp_path: Path) -> None:
    write_wav(tmp_path / "in.wav", _signal(P))
    with WavFileBackend(P, input_path=tmp_path / "in.wav", at_end="silence") as backend:
        backend.read()
        assert all(not np.any(backend.read().mic) for _ in range(5))


def test_input_at_another_rate_is_converted(tmp_path: Path) -> None:
    t = np.arange(48000) / 48000
    write_wav(tmp_path / "in48.wav", (np.sin(2 * np.pi * 500 * t) * 10000).astype(np.int16), 48000)
    with WavFileBackend(P, input_path=tmp_path / "in48.wav") as backend:
        mic = np.concatenate([backend.read().mic for _ in range(90)])
    spectrum = np.abs(np.fft.rfft(mic[1600:14400]))
    assert abs(np.argmax(spectrum) * 16000 / 12800 - 500) <= 2


def test_realtime_pacing(tmp_path: Path) -> None:
    write_wav(tmp_path / "in.wav", _signal(30 * P))
    backend = WavFileBackend(P, input_path=tmp_path / "in.wav", realtime=True)
    assert backend.paced
    with backend:
        started = time.monotonic()
        for _ in range(20):
            backend.read()
        elapsed = time.monotonic() - started
    assert 0.18 <= elapsed < 0.6


async def test_duplex_loop_over_a_wav_file_ends_with_the_file(tmp_path: Path) -> None:
    write_wav(tmp_path / "in.wav", _signal(25 * P))
    backend = WavFileBackend(P, input_path=tmp_path / "in.wav", output_path=tmp_path / "out.wav")
    duplex = DuplexLoop(backend, Speaker(P), queue_periods=3)
    duplex.start()
    frames = [frame async for frame in duplex.frames()]
    duplex.stop()
    assert len(frames) == 25
    assert np.array_equal(np.concatenate([f.mic for f in frames]), _signal(25 * P))


def test_open_backend_builds_each_configured_backend(tmp_path: Path) -> None:
    write_wav(tmp_path / "talk.wav", _signal(P))
    config = build_config([("test", {
        "audio": {"backend": "simulated", "period_ms": 20, "queue_periods": 50},
        "room": {"speed": 0.0, "seed": 3, "echo_delay_ms": 12.5, "duration_s": 1.0,
                 "talkers": [f"{tmp_path / 'talk.wav'}@0.5@-6"]},
    })])
    room = open_backend(config.audio, config.room, config.wav)
    assert isinstance(room, SimulatedRoom)
    assert room.period_samples == 320 and not room.paced and room.echo_delay_samples == 200
    assert duplex_options(config.audio) == {"queue_periods": 50, "reconnect_max_s": 10.0}

    config = build_config([("test", {"audio": {"backend": "wav"},
                                     "wav": {"input": str(tmp_path / "talk.wav"), "realtime": True}})])
    wav = open_backend(config.audio, config.room, config.wav)
    assert isinstance(wav, WavFileBackend) and wav.paced

    config = build_config([("test", {"audio": {"capture_device": "array", "capture_channels": 6,
                                               "capture_rate": 48000, "mic_channels": [0, 1, 2, 3],
                                               "reference_channel": 5}})])
    alsa = open_backend(config.audio, config.room, config.wav)
    assert alsa.name == "alsa:array|default" and alsa.paced


def test_talker_entries_are_parsed_or_rejected() -> None:
    assert parse_talkers(("a.wav@1.5", "b@c.wav@2@-3", "d@e.wav@0.5")) == [
        (Path("a.wav"), 1.5, 0.0), (Path("b@c.wav"), 2.0, -3.0), (Path("d@e.wav"), 0.5, 0.0)]
    with pytest.raises(ConfigError):
        parse_talkers(("no-start.wav",))


async def test_room_from_config_runs_with_its_talker(tmp_path: Path) -> None:
    write_wav(tmp_path / "talk.wav", np.full(P, 5000, np.int16))
    config = build_config([("test", {"audio": {"backend": "simulated", "period_ms": 10}, "room": {
        "speed": 0.0, "noise_dbfs": -150.0, "duration_s": 0.2, "talkers": [f"{tmp_path}/talk.wav@0.1"]}})])
    backend = open_backend(config.audio, config.room, config.wav)
    duplex = DuplexLoop(backend, Speaker(P), **duplex_options(config.audio))
    duplex.start(asyncio.get_running_loop())
    frames = [f async for f in duplex.frames()]
    duplex.stop()
    assert len(frames) == 20
    assert [i for i, f in enumerate(frames) if np.any(f.mic)] == [10]
