"""The ALSA backend against real alsa-lib PCMs (file, null, plug, asym plugins).

Devices come from ``support.alsa_devices``: raw files as microphone arrays, raw files as
speakers. Error paths use a stand-in that wraps a real ``alsaaudio.PCM`` and injects
faults (``alsaaudio.PCM`` is a C type that cannot be subclassed).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

# pyalsaaudio is a hard requirement here: ./dev installs it, and a missing install step
# must fail CI rather than skip these tests.
import alsaaudio
import numpy as np
import pytest
from support.alsa_devices import (
    AlsaDevices,
    install_alsa_devices,
    read_raw,
    start_fifo_writer,
    write_raw,
)
from support.alsa_devices import (
    ramp_channels as _ramp_channels,
)

from edgevoice.audio.errors import DeviceLostError, DeviceNotFoundError
from edgevoice.audio.frames import dbfs
from edgevoice.audio.io.alsa import AlsaBackend
from edgevoice.audio.io.duplex import DuplexLoop
from edgevoice.audio.speaking.playback import Speaker

P = 160


@pytest.fixture
def alsa_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AlsaDevices:
    return install_alsa_devices(tmp_path, monkeypatch)


def _tone(freq: float, rate: int, seconds: float, level_db: float) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return np.sin(2 * np.pi * freq * t) * 10 ** (level_db / 20) * np.sqrt(2)


def _peak_hz(signal: np.ndarray, rate: int = 16000) -> float:
    windowed = signal.astype(float) * np.hanning(len(signal))
    spectrum = np.abs(np.fft.rfft(windowed))
    k = int(np.argmax(spectrum))
    # parabolic interpolation around the peak bin
    a, b, c = np.log(spectrum[k - 1 : k + 2] + 1e-12)
    return (k + 0.5 * (a - c) / (a - 2 * b + c)) * rate / len(signal)


def _read(backend: AlsaBackend, periods: int) -> np.ndarray:
    return np.concatenate([backend.read().mic for _ in range(periods)])


def test_six_channel_capture_is_bit_exact_and_picks_the_channel(alsa_devices: AlsaDevices,
                                                                tmp_path: Path) -> None:
    frames = _ramp_channels(50 * P, 6)
    mic = write_raw(tmp_path / "mic6.raw", frames)
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 6), capture_channels=6,
                          mic_channels=(4,), playback_device=alsa_devices.null, paced=False)
    with backend:
        got = _read(backend, 50)
    assert np.array_equal(got, frames[:, 4].astype(np.int16))


def test_four_channel_s32_capture_averages_the_mic_channels(alsa_devices: AlsaDevices,
                                                            tmp_path: Path) -> None:
    frames = _ramp_channels(30 * P, 4, "S32_LE")
    mic = write_raw(tmp_path / "mic4.raw", frames, "S32_LE")
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 4, 16000, "S32_LE"),
                          capture_channels=4, capture_format="S32_LE", mic_channels=(1, 2),
                          playback_device=alsa_devices.null, paced=False)
    with backend:
        got = _read(backend, 30)
    expected = np.rint((frames[:, 1] + frames[:, 2]) / 2 / 65536)
    assert np.max(np.abs(got - expected)) <= 1  # float32 mixing: within one LSB
    assert np.mean(got == expected) > 0.99


@pytest.mark.parametrize(("rate", "fmt"), [(48000, "S32_LE"), (44100, "S16_LE")])
def test_native_rate_is_converted_to_16k_keeping_frequency_and_level(
        alsa_devices: AlsaDevices, tmp_path: Path, rate: int, fmt: str) -> None:
    seconds = 1.0
    frames = np.zeros((int(rate * seconds), 4))
    frames[:, 0] = _tone(1000.0, rate, seconds, -12.0)
    frames[:, 1] = _tone(7000.0, rate, seconds, -6.0)  # must not leak into the mix
    scale = 2**31 if fmt == "S32_LE" else 2**15
    mic = write_raw(tmp_path / "mic.raw", np.rint(frames * (scale - 1)).astype(np.int64), fmt)
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 4, rate, fmt), capture_channels=4,
                          capture_rate=rate, capture_format=fmt, mic_channels=(0,),
                          playback_device=alsa_devices.null, paced=False)
    with backend:
        got = _read(backend, 90)
    steady = got[1600:]
    assert _peak_hz(steady) == pytest.approx(1000.0, abs=1.0)
    assert dbfs(steady) == pytest.approx(-12.0, abs=0.2)


def test_playback_goes_to_the_file_at_the_devices_rate_on_every_channel(
        alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    silence = write_raw(tmp_path / "silence.raw", np.zeros((100 * P, 1), np.int16))
    out = tmp_path / "spk.raw"
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(silence, 1), playback_rate=48000,
                          playback_channels=2, playback_device=alsa_devices.speaker(out, 2, 48000),
                          prefill_periods=0, paced=False)
    tone = np.rint(_tone(440.0, 16000, 0.5, -10.0) * 32767).astype(np.int16)
    with backend:
        for k in range(len(tone) // P):
            backend.read()
            backend.write(tone[k * P : (k + 1) * P])
    played = read_raw(out, 2)
    assert np.array_equal(played[:, 0], played[:, 1])
    assert 0 <= 3 * len(tone) - len(played) < 1024  # the resampler holds back ~10 ms
    steady = played[4800:-4800, 0]
    assert _peak_hz(steady, 48000) == pytest.approx(440.0, abs=0.5)
    assert dbfs(steady) == pytest.approx(-10.0, abs=0.2)


async def test_duplex_reference_is_what_reached_the_speaker_and_loopback_is_aligned(
        alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    rate, seconds, delay = 48000, 1.0, 240  # 5 ms of echo delay at 48 kHz
    rng = np.random.default_rng(3)
    far = rng.standard_normal(int(rate * seconds)) * 0.1
    frames = np.zeros((len(far), 4))
    frames[delay:, 0] = far[:-delay] * 0.5  # the microphone hears the speaker 5 ms late
    frames[:, 3] = far  # the array's hardware loopback channel
    mic = write_raw(tmp_path / "mic.raw", np.rint(frames * 32767).astype(np.int64))
    out = tmp_path / "spk.raw"
    device = alsa_devices.duplex(mic, 4, rate, "S16_LE", out)
    backend = AlsaBackend(P, capture_device=device, playback_device=device, capture_channels=4,
                          capture_rate=rate, mic_channels=(0,), reference_channel=3,
                          prefill_periods=2, paced=False)
    speaker = Speaker(P)
    speech = (rng.standard_normal(40 * P) * 3000).astype(np.int16)
    speaker.enqueue(speech, utterance_id="u")
    duplex = DuplexLoop(backend, speaker, queue_periods=8)
    duplex.start(asyncio.get_running_loop())
    got = []
    async for frame in duplex.frames():
        got.append(frame)
        if len(got) == 90:
            break
    duplex.stop()
    assert [f.index for f in got] == list(range(90))
    mic16 = np.concatenate([f.mic for f in got]).astype(float)
    ref16 = np.concatenate([f.reference for f in got]).astype(float)
    a, b = mic16[200:12000], ref16[200:12000]
    corr = np.fft.irfft(np.fft.rfft(a, 32768) * np.conj(np.fft.rfft(b, 32768)), 32768)
    assert int(np.argmax(corr[:1000])) == delay // 3
    # Written frames: the file holds the pre-fill silence, then the speech, sample for sample.
    played = read_raw(out)
    assert not np.any(played[: 2 * P])
    assert np.array_equal(played[2 * P : 2 * P + len(speech)], speech)


async def test_real_time_paced_run_through_a_fifo(alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    periods = 40
    frames = _ramp_channels((periods + 20) * P, 4)
    source = write_raw(tmp_path / "source.raw", frames)
    fifo = tmp_path / "mic.fifo"
    writer = start_fifo_writer(fifo, source, P * 4 * 2, P / 16000)
    try:
        backend = AlsaBackend(P, capture_device=alsa_devices.mic(fifo, 4), capture_channels=4,
                              mic_channels=(2,), playback_device=alsa_devices.speaker(tmp_path / "o.raw"))
        duplex = DuplexLoop(backend, Speaker(P), queue_periods=4)
        started = time.monotonic()
        duplex.start(asyncio.get_running_loop())
        got = []
        async for frame in duplex.frames():
            got.append(frame.mic)
            await asyncio.sleep(0)  # a consumer that keeps up
            if len(got) == periods:
                break
        elapsed = time.monotonic() - started
        duplex.stop()
    finally:
        writer.kill()
        writer.wait()
    assert np.array_equal(np.concatenate(got), frames[: periods * P, 2].astype(np.int16))
    assert elapsed >= 0.8 * periods * P / 16000
    assert duplex.stats.dropped == 0


def test_a_wrong_device_name_lists_the_devices_that_exist(alsa_devices: AlsaDevices) -> None:
    backend = AlsaBackend(P, capture_device="no_such_array", playback_device=alsa_devices.null)
    with pytest.raises(DeviceNotFoundError) as caught:
        backend.open()
    assert "no_such_array" in caught.value.message
    assert "evnull" in caught.value.message
    assert caught.value.code == "device_not_found"


# --- error paths through a stand-in around a real PCM -------------------------------------------

class FaultyPcm:
    """A real ``alsaaudio.PCM`` with scripted faults, shaped like ``alsaaudio.PCM``.

    ``alsaaudio.PCM`` refuses subclasses, so this wraps one and delegates to it."""

    faults: dict[str, Any] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        script = type(self).faults
        if script.get("open_failures", 0) > 0:
            script["open_failures"] -= 1
            raise alsaaudio.ALSAAudioError(f"No such file or directory [{kwargs.get('device')}]")
        self.real = alsaaudio.PCM(*args, **kwargs)
        self.reads = 0
        self.writes = 0

    def read(self) -> tuple[int, bytes]:
        self.reads += 1
        script = type(self).faults
        if self.reads in script.get("overrun_reads", ()):
            return -32, b""  # what pyalsaaudio returns after an overrun (-EPIPE)
        if self.reads == script.get("gone_at_read"):
            script["gone_at_read"] = None
            raise alsaaudio.ALSAAudioError("No such device [usb array]")
        result: tuple[int, bytes] = self.real.read()
        return result

    def write(self, data: bytes) -> int:
        self.writes += 1
        if self.writes in type(self).faults.get("broken_pipe_writes", ()):
            raise alsaaudio.ALSAAudioError("Broken pipe [speaker]")
        return int(self.real.write(data))

    def avail(self) -> int:
        fixed = type(self).faults.get("avail")
        return int(self.real.avail()) if fixed is None else int(fixed)

    def state(self) -> int:
        return int(self.real.state())

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = self.real.info()
        return info

    def drop(self) -> int:
        return int(self.real.drop())

    def close(self) -> None:
        self.real.close()


def _faulty(faults: dict[str, Any]) -> type[FaultyPcm]:
    return type("ScriptedPcm", (FaultyPcm,), {"faults": faults})


def test_overruns_are_counted_logged_once_per_burst_and_recovered(
        alsa_devices: AlsaDevices, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    frames = _ramp_channels(20 * P, 2)
    mic = write_raw(tmp_path / "mic.raw", frames)
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 2), capture_channels=2,
                          playback_device=alsa_devices.null, paced=False,
                          pcm_factory=_faulty({"overrun_reads": {3, 4, 5}}))
    caplog.set_level(logging.WARNING, logger="edgevoice.audio.io.alsa")
    with backend:
        got = _read(backend, 10)
    assert backend.stats.overruns == 3
    assert np.array_equal(got, frames[: 10 * P, 0].astype(np.int16))  # no data lost or repeated
    assert len([r for r in caplog.records if "overrun" in r.getMessage()]) == 1


def test_a_device_that_only_overruns_counts_as_lost(alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    mic = write_raw(tmp_path / "mic.raw", np.zeros((20 * P, 1), np.int16))
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 1), playback_device=alsa_devices.null,
                          paced=False, pcm_factory=_faulty({"overrun_reads": set(range(1, 1000))}))
    with backend, pytest.raises(DeviceLostError):
        backend.read()
    assert backend.stats.overruns == 50


def test_a_broken_pipe_on_write_is_an_underrun_that_recovers(alsa_devices: AlsaDevices,
                                                             tmp_path: Path) -> None:
    silence = write_raw(tmp_path / "mic.raw", np.zeros((20 * P, 1), np.int16))
    out = tmp_path / "spk.raw"
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(silence, 1),
                          playback_device=alsa_devices.speaker(out), prefill_periods=0, paced=False,
                          pcm_factory=_faulty({"broken_pipe_writes": {2}}))
    sent = [np.full(P, k + 1, np.int16) for k in range(5)]
    with backend:
        for pcm in sent:
            backend.read()
            backend.write(pcm)
    assert backend.stats.underruns == 1
    assert np.array_equal(read_raw(out), np.concatenate(sent))


def test_output_latency_is_what_alsa_reports_queued(alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    silence = write_raw(tmp_path / "mic.raw", np.zeros((20 * P, 1), np.int16))
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(silence, 1), playback_rate=48000,
                          playback_device=alsa_devices.speaker(tmp_path / "o.raw", 1, 48000),
                          buffer_periods=4, paced=False, pcm_factory=_faulty({"avail": 4 * 480 - 960}))
    with backend:
        assert backend.output_latency_samples() == 2 * P


async def test_a_vanished_device_is_reopened_and_reported(alsa_devices: AlsaDevices,
                                                          tmp_path: Path) -> None:
    frames = _ramp_channels(200 * P, 1)
    mic = write_raw(tmp_path / "mic.raw", frames)
    faults: dict[str, Any] = {"gone_at_read": 5}
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 1), playback_device=alsa_devices.null,
                          paced=False, pcm_factory=_faulty(faults))
    events: list[tuple[str, dict[str, Any]]] = []
    duplex = DuplexLoop(backend, Speaker(P), reconnect_initial_s=0.01, reconnect_max_s=0.05,
                        on_event=lambda t, d: events.append((t, d)))
    duplex.start(asyncio.get_running_loop())
    faults["open_failures"] = 2  # the array stays unplugged for two attempts
    got = []
    async for frame in duplex.frames():
        got.append(frame)
        if len(got) == 12:
            break
    duplex.stop()
    await asyncio.sleep(0)
    assert [t for t, _ in events] == ["audio.device_lost", "audio.device_restored"]
    assert events[1][1]["attempts"] == 3  # two failed, the third worked
    assert duplex.stats.reopened == 1
    # After the reopen the file plays from its start again, continuously.
    # The fifth read failed: frame 4 is the first one after the reopen, and the file
    # device plays from its start again.
    assert [f.index for f in got] == list(range(12))
    assert np.array_equal(got[3].mic, frames[3 * P : 4 * P, 0].astype(np.int16))
    assert np.array_equal(got[4].mic, frames[:P, 0].astype(np.int16))


def test_read_on_a_vanished_device_raises_device_lost(alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    mic = write_raw(tmp_path / "mic.raw", np.zeros((20 * P, 1), np.int16))
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 1), playback_device=alsa_devices.null,
                          paced=False, pcm_factory=_faulty({"gone_at_read": 2}))
    with backend:
        backend.read()
        with pytest.raises(DeviceLostError) as caught:
            backend.read()
    assert caught.value.code == "audio_device_lost"
