"""The C period loop (audio/io/_rtloop.c through audio/io/rtloop.py) on real alsa-lib PCMs.

File PCMs over plain files (unpaced: virtual time, nothing dropped) for bit-exactness,
formats and alignment; a FIFO written at 1x by another process (paced, as a card) for
timing: a thread holding the GIL for 300 ms, the whole process stopped for 300 ms.
Device loss goes through the loop's own stand-in for a failing PCM (``inject``: the next
reads return what a failing card's snd_pcm_readi returns).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.alsa_devices import (
    AlsaDevices,
    install_alsa_devices,
    ramp_channels,
    read_raw,
    start_fifo_writer,
    write_raw,
)

from edgevoice.audio.errors import AudioDeviceError, DeviceLostError, DeviceNotFoundError
from edgevoice.audio.io import rtloop
from edgevoice.audio.io.alsa import AlsaBackend
from edgevoice.audio.io.duplex import DuplexLoop
from edgevoice.audio.io.rtloop import RtAlsaBackend, open_alsa_backend
from edgevoice.audio.speaking.playback import Speaker

P = 160
pytestmark = pytest.mark.skipif(rtloop.load_rtloop() is None, reason="the C period loop is not built")


@pytest.fixture
def alsa_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AlsaDevices:
    return install_alsa_devices(tmp_path, monkeypatch)


def _mics(backend: Any, periods: int) -> list[Any]:
    return [backend.read() for _ in range(periods)]


@pytest.mark.parametrize("case", [(6, 16000, "S16_LE", (2,), -1), (4, 48000, "S32_LE", (0, 1, 2), 3),
                                  (2, 44100, "S16_LE", (0, 1), -1)])
def test_capture_is_exactly_what_the_pyalsaaudio_backend_gives(
        alsa_devices: AlsaDevices, tmp_path: Path, case: tuple[int, int, str, tuple[int, ...], int]) -> None:
    channels, rate, fmt, mics, ref = case
    frames = ramp_channels(rate // 100 * 60, channels, fmt)
    mic = write_raw(tmp_path / "mic.raw", frames, fmt)
    options: dict[str, Any] = dict(capture_device=alsa_devices.mic(mic, channels, rate, fmt),
                                   playback_device=alsa_devices.null, capture_channels=channels,
                                   capture_rate=rate, capture_format=fmt, mic_channels=mics,
                                   reference_channel=ref, paced=False)
    with AlsaBackend(P, **options) as python_backend:
        expected = _mics(python_backend, 40)
    with RtAlsaBackend(P, **options) as c_backend:
        got = _mics(c_backend, 40)
    assert all(np.array_equal(g.mic, e.mic) for g, e in zip(got, expected, strict=True))
    if ref >= 0:  # the hardware loopback channel is the reference, through the same path
        assert all(np.array_equal(g.loopback, e.loopback) for g, e in zip(got, expected, strict=True))
    if channels == 6:  # one 16 kHz S16 channel: bit-exact against the file itself
        assert np.array_equal(np.concatenate([g.mic for g in got]), frames[: 40 * P, 2].astype(np.int16))


async def test_the_reference_is_exactly_what_reached_the_speaker(alsa_devices: AlsaDevices,
                                                                 tmp_path: Path) -> None:
    rate = 48000
    mic = write_raw(tmp_path / "mic.raw", ramp_channels(rate // 100 * 120, 1))
    out = tmp_path / "spk.raw"
    backend = RtAlsaBackend(P, capture_device=alsa_devices.mic(mic, 1, rate), capture_rate=rate,
                            playback_device=alsa_devices.speaker(out), paced=False)
    speaker = Speaker(P)
    rng = np.random.default_rng(5)
    speech = (rng.standard_normal(60 * P) * 3000).astype(np.int16)
    speaker.enqueue(speech, utterance_id="u")
    duplex = DuplexLoop(backend, speaker, queue_periods=8)
    duplex.start(asyncio.get_running_loop())
    got = []
    async for frame in duplex.frames():
        got.append(frame)
        if len(got) == 100:
            break
    duplex.stop()
    references = np.concatenate([f.reference for f in got])
    played = read_raw(out)
    prefill = backend.prefill_periods * P
    # Every period the loop wrote is the reference of the capture period read with it.
    assert not np.any(played[:prefill])
    assert np.array_equal(played[prefill : prefill + len(references)], references)
    start = int(np.flatnonzero(references)[0])
    assert start >= backend.lookahead_periods * P  # behind the queue's initial silence
    assert np.array_equal(references[start : start + len(speech)], speech)


async def test_the_hardware_loopback_stays_aligned_with_the_mic(alsa_devices: AlsaDevices,
                                                               tmp_path: Path) -> None:
    rate, delay = 48000, 240  # 5 ms of echo path at 48 kHz
    rng = np.random.default_rng(3)
    far = rng.standard_normal(rate) * 0.1
    frames = np.zeros((len(far), 4))
    frames[delay:, 0] = far[:-delay] * 0.5
    frames[:, 3] = far
    mic = write_raw(tmp_path / "mic.raw", np.rint(frames * 32767).astype(np.int64))
    device = alsa_devices.duplex(mic, 4, rate, "S16_LE", tmp_path / "spk.raw")
    backend = RtAlsaBackend(P, capture_device=device, playback_device=device, capture_channels=4,
                            capture_rate=rate, mic_channels=(0,), reference_channel=3, paced=False)
    duplex = DuplexLoop(backend, Speaker(P), queue_periods=8)
    duplex.start(asyncio.get_running_loop())
    got = []
    async for frame in duplex.frames():
        got.append(frame)
        if len(got) == 90:
            break
    duplex.stop()
    a = np.concatenate([f.mic for f in got]).astype(float)[200:12000]
    b = np.concatenate([f.reference for f in got]).astype(float)[200:12000]
    corr = np.fft.irfft(np.fft.rfft(a, 32768) * np.conj(np.fft.rfft(b, 32768)), 32768)
    assert int(np.argmax(corr[:1000])) == delay // 3


def test_playback_reaches_the_file_at_the_devices_rate_on_every_channel(alsa_devices: AlsaDevices,
                                                                        tmp_path: Path) -> None:
    mic = write_raw(tmp_path / "mic.raw", ramp_channels(100 * P, 1))
    out = tmp_path / "spk.raw"
    tone = np.rint(np.sin(2 * np.pi * 440 * np.arange(80 * P) / 16000) * 8000).astype(np.int16)
    options: dict[str, Any] = dict(capture_device=alsa_devices.mic(mic, 1), playback_rate=48000,
                                   playback_device=alsa_devices.speaker(out, 2, 48000),
                                   playback_channels=2, paced=False)
    with RtAlsaBackend(P, **options) as backend:
        for index in range(80):
            backend.read()
            if backend.playback_wanted():
                backend.write(tone[index * P : (index + 1) * P])
    played_c = read_raw(out, 2)
    with AlsaBackend(P, **options) as reference_backend:
        for index in range(80):
            reference_backend.read()
            reference_backend.write(tone[index * P : (index + 1) * P])
    played_py = read_raw(out, 2)
    assert np.array_equal(played_c[:, 0], played_c[:, 1])
    # the same conversion, the same bytes (after the silence each queued first)
    c_start, py_start = int(np.flatnonzero(played_c[:, 0])[0]), int(np.flatnonzero(played_py[:, 0])[0])
    n = min(len(played_c) - c_start, len(played_py) - py_start)
    assert n >= 70 * 480
    assert np.array_equal(played_c[c_start : c_start + n], played_py[py_start : py_start + n])


async def test_drop_silences_the_speaker_within_a_period(alsa_devices: AlsaDevices,
                                                        tmp_path: Path) -> None:
    backend, writer, _ = _paced_backend(alsa_devices, tmp_path, 120, RtAlsaBackend)
    speaker = Speaker(P)
    speaker.enqueue(np.full(150 * P, 1000, np.int16), utterance_id="long")
    duplex = DuplexLoop(backend, speaker, queue_periods=100)
    duplex.start(asyncio.get_running_loop())
    sounding = []
    dropped_at = None
    async for frame in duplex.frames():
        sounding.append(bool(frame.reference.any()))
        if len(sounding) == 40:
            speaker.drop()
            dropped_at = int(backend.loop_stats()["periods"])  # where the C loop is (not we)
        if len(sounding) == 80:
            break
    duplex.stop()
    writer.kill()
    writer.wait()
    assert backend.lookahead_periods == 12  # paced: the C loop's queue is 120 ms deep
    assert dropped_at is not None and all(sounding[15:40])
    # what the C loop queued is discarded: at most the period in flight still sounds
    still = sounding[dropped_at:]
    assert sum(still) <= 2 and not any(still[2:])
    assert len(still) >= 30
    heard = speaker.progress("long")[0]
    # the cursor took back what was discarded: what was written is what reached the device
    assert heard.dropped and heard.total == int(sum(sounding)) * P


async def test_speech_queued_into_silence_does_not_wait_behind_the_queue(
        alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    backend, writer, _ = _paced_backend(alsa_devices, tmp_path, 100, RtAlsaBackend)
    speaker = Speaker(P)
    duplex = DuplexLoop(backend, speaker, queue_periods=100)
    duplex.start(asyncio.get_running_loop())
    frames = []
    queued_at = 0
    async for frame in duplex.frames():
        frames.append(frame)
        if len(frames) == 30:  # the C loop's queue is full of silence by now
            speaker.enqueue(np.full(20 * P, 500, np.int16), utterance_id="reply")
            queued_at = int(backend.loop_stats()["periods"])  # where the C loop is (not we)
        if len(frames) == 80:
            break
    duplex.stop()
    writer.kill()
    writer.wait()
    first = next(i for i, f in enumerate(frames) if f.reference.any())
    assert first - queued_at <= 2 < backend.lookahead_periods
    assert duplex.stats.dropped == 0
    assert sum(f.reference.any() for f in frames) == 20  # all of it, once
    assert speaker.progress("reply")[0].complete


def _hold_the_gil(seconds: float) -> None:
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1


def _paced_backend(alsa_devices: AlsaDevices, tmp_path: Path, periods: int,
                   cls: type[Any]) -> tuple[Any, Any, np.ndarray]:
    frames = ramp_channels(periods * P, 1)
    source = write_raw(tmp_path / f"src{cls.__name__}.raw", frames)
    fifo = tmp_path / f"mic{cls.__name__}.fifo"
    writer = start_fifo_writer(fifo, source, P * 2, P / 16000, rt_priority=30)
    backend = cls(P, capture_device=alsa_devices.mic(fifo, 1),
                  playback_device=alsa_devices.speaker(tmp_path / f"o{cls.__name__}.raw"))
    return backend, writer, frames[:, 0].astype(np.int16)


def _run_paced_with_gil_held(backend: Any, periods: int) -> tuple[list[Any], list[float]]:
    """Read ``periods`` periods; after 50 a thread holds the GIL for 300 ms (a switch
    interval of 1 s, so the interpreter does not hand it over). Returns the periods and,
    per period, when Python got it."""
    got, times = [], []
    holder = threading.Thread(target=_hold_the_gil, args=(0.3,))
    interval = sys.getswitchinterval()
    try:
        for index in range(periods):
            got.append(backend.read().mic)
            times.append(time.monotonic())
            if backend.playback_wanted():
                backend.write(np.zeros(P, np.int16))
            if index == 50:
                sys.setswitchinterval(1.0)
                holder.start()
                time.sleep(0.001)  # hand the GIL to the holder
    finally:
        holder.join()
        sys.setswitchinterval(interval)
    return got, times


def test_a_thread_holding_the_gil_for_300_ms_makes_no_capture_period_late(
        alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    periods = 120
    backend, writer, source = _paced_backend(alsa_devices, tmp_path, periods + 20, RtAlsaBackend)
    try:
        with backend:
            got, times = _run_paced_with_gil_held(backend, periods)
            stats = backend.loop_stats()
    finally:
        writer.kill()
        writer.wait()
    assert np.array_equal(np.concatenate(got), source[: periods * P])
    # Python itself was stopped for the 300 ms (the periods reached it in a burst) ...
    assert max(np.diff(times)) >= 0.25
    # ... but the C loop read every period on time: none late by the 40 ms buffer.
    assert stats["periods"] >= periods
    assert stats["late_ge_buffer"] == 0, stats
    assert stats["late_max_ms"] < 40.0, stats
    assert stats["overruns"] == 0 and stats["ring_dropped"] == 0


def test_the_pyalsaaudio_loop_is_late_under_the_same_gil_holder(alsa_devices: AlsaDevices,
                                                                tmp_path: Path) -> None:
    """The contrast that shows the test above measures something: the Python loop's reads
    wait for the GIL, so periods are serviced 250+ ms late (a card would overrun)."""
    periods = 120
    backend, writer, source = _paced_backend(alsa_devices, tmp_path, periods + 20, AlsaBackend)
    try:
        with backend:
            got, times = _run_paced_with_gil_held(backend, periods)
    finally:
        writer.kill()
        writer.wait()
    start = times[0]
    lateness = [t - (start + i * 0.01) for i, t in enumerate(times)]
    assert max(lateness) >= 0.25
    assert np.array_equal(np.concatenate(got), source[: periods * P])  # the file plugin waits


def test_a_process_stopped_for_300_ms_loses_nothing_and_the_stall_is_measured(
        alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    periods = 120
    backend, writer, source = _paced_backend(alsa_devices, tmp_path, periods + 20, RtAlsaBackend)
    try:
        with backend:
            got = []
            for index in range(periods):
                got.append(backend.read().mic)
                if backend.playback_wanted():
                    backend.write(np.zeros(P, np.int16))
                if index == 40:  # SIGSTOP the whole process, the C thread included
                    subprocess.Popen(["sh", "-c", f"kill -STOP {os.getpid()}; sleep 0.3; "
                                      f"kill -CONT {os.getpid()}"])
            stats = backend.loop_stats()
    finally:
        writer.kill()
        writer.wait()
    assert np.array_equal(np.concatenate(got), source[: periods * P])
    assert stats["late_max_ms"] >= 200.0  # the stall is seen, as a card would overrun
    assert stats["late_ge_buffer"] >= 10


async def _run_with_a_fault(alsa_devices: AlsaDevices, tmp_path: Path, frames: np.ndarray, code: int,
                            **options: Any) -> tuple[RtAlsaBackend, DuplexLoop, list[Any], list[Any]]:
    """60 frames through the duplex loop on the C loop; after 5 the next capture read
    returns ``code``, as a failing card's snd_pcm_readi would."""
    mic = write_raw(tmp_path / "mic.raw", frames)
    backend = RtAlsaBackend(P, capture_device=alsa_devices.mic(mic, 1),
                            playback_device=alsa_devices.speaker(tmp_path / "spk.raw"), paced=False)
    events: list[tuple[str, dict[str, Any]]] = []
    duplex = DuplexLoop(backend, Speaker(P), queue_periods=8, on_event=lambda t, d: events.append((t, d)),
                        **options)
    duplex.start(asyncio.get_running_loop())
    got = []
    async for frame in duplex.frames():
        got.append(frame)
        if len(got) == 5:
            backend.inject_capture_error(code, 1)
        if len(got) == 60:
            break
    duplex.stop()
    await asyncio.sleep(0)
    return backend, duplex, got, events


async def test_an_xrun_is_recovered_counted_reported_and_flagged(alsa_devices: AlsaDevices,
                                                                 tmp_path: Path) -> None:
    backend, _, got, events = await _run_with_a_fault(
        alsa_devices, tmp_path, ramp_channels(300 * P, 1), -errno.EPIPE, xrun_event_interval_s=0.0)
    assert backend.stats.overruns == 1
    assert sum(f.discontinuity for f in got) == 1
    assert ("audio.xrun", {"device": backend.name, "overruns": 1, "underruns": 0, "new": 1}) in events
    assert [f.index for f in got] == list(range(60))


async def test_a_vanished_device_is_reopened_with_backoff_and_reported(alsa_devices: AlsaDevices,
                                                                       tmp_path: Path) -> None:
    frames = ramp_channels(400 * P, 1)
    _, duplex, got, events = await _run_with_a_fault(alsa_devices, tmp_path, frames, -errno.ENODEV,
                                                     reconnect_initial_s=0.01, reconnect_max_s=0.05)
    assert [t for t, _ in events] == ["audio.device_lost", "audio.device_restored"]
    assert "No such device" in events[0][1]["message"]
    assert duplex.stats.reopened == 1 and duplex.stats.device_lost == 1
    # after the reopen the file device plays from its start again
    mics = [f.mic for f in got]
    restart = next(i for i in range(6, 60) if np.array_equal(mics[i], frames[:P, 0].astype(np.int16)))
    assert np.array_equal(np.concatenate(mics[restart:]),
                          frames[: (60 - restart) * P, 0].astype(np.int16))


def test_a_wrong_device_name_lists_the_devices_that_exist(alsa_devices: AlsaDevices) -> None:
    backend = RtAlsaBackend(P, capture_device="no_such_array", playback_device=alsa_devices.null)
    with pytest.raises(DeviceNotFoundError, match="no ALSA capture device called 'no_such_array'") as info:
        backend.open()
    assert "evnull" in str(info.value)
    with pytest.raises(DeviceLostError):
        backend.read()


def test_the_loop_thread_reports_its_scheduling_once(alsa_devices: AlsaDevices, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    mic = write_raw(tmp_path / "mic.raw", ramp_channels(50 * P, 1))
    caplog.set_level(logging.INFO, "edgevoice.audio.io.rtloop")
    for priority in (20, 0):
        backend = RtAlsaBackend(P, capture_device=alsa_devices.mic(mic, 1), rt_priority=priority,
                                playback_device=alsa_devices.null, paced=False)
        with backend:
            for _ in range(5):
                backend.read()
                if backend.playback_wanted():
                    backend.write(np.zeros(P, np.int16))
            stats = backend.loop_stats()
        if priority == 0:
            assert stats["rt_error"] == -1
            assert "SCHED_FIFO not asked for" in caplog.text
        elif stats["rt_error"] == 0:  # allowed here (root, or LimitRTPRIO)
            assert "audio loop thread: SCHED_FIFO priority 20" in caplog.text
        else:
            assert "SCHED_FIFO priority 20 refused" in caplog.text


def test_without_the_extension_the_pyalsaaudio_loop_runs_and_says_so(
        alsa_devices: AlsaDevices, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # An install without a compiler or libasound2-dev: the module cannot be imported.
    monkeypatch.setitem(sys.modules, "edgevoice.audio.io._rtloop", None)
    monkeypatch.delattr("edgevoice.audio.io._rtloop", raising=False)
    rtloop._log_fallback.cache_clear()
    caplog.set_level(logging.INFO, "edgevoice.audio.io.rtloop")
    assert rtloop.load_rtloop() is None
    frames = ramp_channels(30 * P, 1)
    mic = write_raw(tmp_path / "mic.raw", frames)
    options: dict[str, Any] = dict(capture_device=alsa_devices.mic(mic, 1),
                                   playback_device=alsa_devices.null, paced=False)
    backend = open_alsa_backend(P, loop="auto", **options)
    assert type(backend) is AlsaBackend
    ours = [r for r in caplog.records if r.name == "edgevoice.audio.io.rtloop"]
    assert [r.levelname for r in ours] == ["INFO"]
    assert "C period loop (edgevoice.audio.io._rtloop) is not built" in caplog.text
    assert "libasound2-dev" in caplog.text
    with backend:  # and the fallback works
        assert np.array_equal(backend.read().mic, frames[:P, 0].astype(np.int16))
    open_alsa_backend(P, loop="auto", **options)
    assert len([r for r in caplog.records if r.name == "edgevoice.audio.io.rtloop"]) == 1  # said once
    with pytest.raises(AudioDeviceError, match="audio.loop is 'c' but the C period loop is not built"):
        open_alsa_backend(P, loop="c", **options)
    assert type(open_alsa_backend(P, loop="python", **options)) is AlsaBackend
    rtloop._log_fallback.cache_clear()


def test_auto_picks_the_c_loop_where_it_is_built(alsa_devices: AlsaDevices) -> None:
    assert type(open_alsa_backend(P, capture_device=alsa_devices.null,
                                  playback_device=alsa_devices.null)) is RtAlsaBackend
    with pytest.raises(ValueError, match="loop must be one of"):
        open_alsa_backend(P, loop="fast")
