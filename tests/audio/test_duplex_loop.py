"""The duplex loop: alignment, hand-over without loss or with counted drops, device loss."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import numpy as np
import pytest

from edgevoice.audio.errors import DeviceLostError, DeviceNotFoundError, EndOfInput
from edgevoice.audio.frames import DuplexFrame, Pcm
from edgevoice.audio.io.backend import AudioBackend, Captured
from edgevoice.audio.io.duplex import DuplexLoop
from edgevoice.audio.io.room import SimulatedRoom
from edgevoice.audio.speaking.playback import Speaker

PERIOD = 160


class ScriptedBackend(AudioBackend):
    """A backend whose capture is a counter (sample value = period index) and whose
    failures are scripted: a fake that subclasses the real interface."""

    def __init__(self, *, paced: bool = False, period_s: float = 0.0, periods: int | None = None,
                 lose_at: int | None = None, failed_reopens: int = 0, loopback: bool = False) -> None:
        super().__init__(PERIOD)
        self._paced = paced
        self.period_s = period_s
        self.periods = periods
        self.lose_at = lose_at
        self.failed_reopens = failed_reopens
        self.loopback = loopback
        self.reads = 0
        self.opens = 0
        self.closes = 0
        self.is_open = False
        self.written: list[Pcm] = []
        self.overrun_at: set[int] = set()

    @property
    def paced(self) -> bool:
        return self._paced

    def open(self) -> None:
        self.opens += 1
        if self.opens > 1 and self.failed_reopens > 0:
            self.failed_reopens -= 1
            raise DeviceNotFoundError("no such device (still unplugged)")
        self.is_open = True

    def read(self) -> Captured:
        assert self.is_open
        if self.periods is not None and self.reads >= self.periods:
            raise EndOfInput("script done")
        if self.lose_at is not None and self.reads == self.lose_at:
            self.lose_at = None
            raise DeviceLostError("device unplugged")
        if self.period_s:
            time.sleep(self.period_s)
        if self.reads in self.overrun_at:
            self.stats.overruns += 1
        value = self.reads % 30000
        self.reads += 1
        mic = np.full(PERIOD, value, np.int16)
        return Captured(mic, np.full(PERIOD, -value, np.int16) if self.loopback else None)

    def write(self, pcm: Pcm) -> None:
        self.written.append(pcm.copy())

    def output_latency_samples(self) -> int:
        return 2 * PERIOD

    def close(self) -> None:
        self.closes += 1
        self.is_open = False


async def _collect(duplex: DuplexLoop, delay_s: float = 0.0, limit: int | None = None) -> list[DuplexFrame]:
    frames = []
    async for frame in duplex.frames():
        frames.append(frame)
        if delay_s:
            await asyncio.sleep(delay_s)
        if limit is not None and len(frames) >= limit:
            break
    return frames


async def test_unpaced_backend_loses_nothing_with_a_slow_consumer() -> None:
    backend = ScriptedBackend(periods=60)
    duplex = DuplexLoop(backend, Speaker(PERIOD), queue_periods=4)
    duplex.start()
    frames = await _collect(duplex, delay_s=0.002)
    duplex.stop()
    assert [f.index for f in frames] == list(range(60))
    assert [int(f.mic[0]) for f in frames] == list(range(60))
    assert duplex.stats.dropped == 0
    assert backend.closes >= 1


async def test_paced_backend_drops_oldest_and_reports_it() -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    backend = ScriptedBackend(paced=True, period_s=0.001, periods=80)
    duplex = DuplexLoop(backend, Speaker(PERIOD), queue_periods=5,
                        on_event=lambda t, d: events.append((t, d)), xrun_event_interval_s=0.0)
    duplex.start()
    await asyncio.sleep(0.3)  # consume nothing: the thread must keep going
    assert backend.reads == 80
    frames = await _collect(duplex)
    duplex.stop()
    assert [f.index for f in frames] == list(range(75, 80))
    assert duplex.stats.dropped == 75
    assert any(t == "audio.queue_dropped" for t, _ in events)


async def test_reference_is_what_was_written_and_speaker_cursor_follows() -> None:
    backend = ScriptedBackend(periods=20)
    speaker = Speaker(PERIOD)
    speech = np.arange(1, 5 * PERIOD + 1, dtype=np.int16)
    speaker.enqueue(speech, utterance_id="u1", text="hello")
    duplex = DuplexLoop(backend, speaker)
    duplex.start()
    frames = await _collect(duplex)
    duplex.stop()
    reference = np.concatenate([f.reference for f in frames])
    assert np.array_equal(reference, np.concatenate(backend.written))
    assert np.array_equal(reference[: len(speech)], speech)
    assert not np.any(reference[len(speech) :])
    assert speaker.progress("u1")[0].played == len(speech)


async def test_hardware_loopback_channel_is_the_reference_when_captured() -> None:
    backend = ScriptedBackend(periods=5, loopback=True)
    duplex = DuplexLoop(backend, Speaker(PERIOD))
    duplex.start()
    frames = await _collect(duplex)
    duplex.stop()
    assert [int(f.reference[0]) for f in frames] == [0, -1, -2, -3, -4]


async def test_device_lost_is_reported_retried_with_backoff_and_restored() -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    backend = ScriptedBackend(periods=30, lose_at=10, failed_reopens=3)
    duplex = DuplexLoop(backend, Speaker(PERIOD), reconnect_initial_s=0.01, reconnect_max_s=0.02,
                        on_event=lambda t, d: events.append((t, d)))
    duplex.start()
    frames = await _collect(duplex)
    duplex.stop()
    await asyncio.sleep(0)
    assert [f.index for f in frames] == list(range(30))
    kinds = [t for t, _ in events]
    assert kinds == ["audio.device_lost", "audio.device_restored"]
    assert events[0][1]["code"] == "audio_device_lost"
    assert events[1][1]["attempts"] == 4
    assert backend.opens == 5
    assert duplex.stats.device_lost == 1 and duplex.stats.reopened == 1


async def test_xruns_are_reported_rate_limited() -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    backend = ScriptedBackend(periods=50)
    backend.overrun_at = {3, 4, 5, 40}
    duplex = DuplexLoop(backend, Speaker(PERIOD), on_event=lambda t, d: events.append((t, d)),
                        xrun_event_interval_s=60.0)
    duplex.start()
    await _collect(duplex)
    duplex.stop()
    await asyncio.sleep(0)
    xruns = [d for t, d in events if t == "audio.xrun"]
    assert len(xruns) == 1 and xruns[0]["overruns"] == 1
    assert duplex.stats.overruns == 4


async def test_stop_ends_the_consumer_and_closes_the_backend() -> None:
    backend = ScriptedBackend(paced=True, period_s=0.005)
    duplex = DuplexLoop(backend, Speaker(PERIOD))
    duplex.start()
    consumer = asyncio.create_task(_collect(duplex))
    await asyncio.sleep(0.1)
    duplex.stop()
    frames = await asyncio.wait_for(consumer, 2.0)
    assert len(frames) > 5
    assert not duplex.running and not backend.is_open


async def test_start_raises_a_wrong_device_at_once() -> None:
    class Missing(ScriptedBackend):
        def open(self) -> None:
            raise DeviceNotFoundError("no PCM called 'nope'")

    duplex = DuplexLoop(Missing(), Speaker(PERIOD))
    with pytest.raises(DeviceNotFoundError):
        duplex.start()
    assert not duplex.running


async def test_audio_thread_is_not_the_event_loop_thread() -> None:
    seen: list[threading.Thread] = []

    class Recording(ScriptedBackend):
        def read(self) -> Captured:
            seen.append(threading.current_thread())
            return super().read()

    duplex = DuplexLoop(Recording(periods=3), Speaker(PERIOD))
    duplex.start()
    await _collect(duplex)
    duplex.stop()
    assert seen and all(t is not threading.main_thread() for t in seen)


async def test_room_echo_is_aligned_with_the_reference() -> None:
    room = SimulatedRoom(PERIOD, speed=0, echo_gain_db=-6, echo_delay_ms=25, rt60_s=0,
                         noise_dbfs=-150, duration_s=1.0)
    speaker = Speaker(PERIOD)
    rng = np.random.default_rng(4)
    speaker.enqueue((rng.standard_normal(8000) * 4000).astype(np.int16), utterance_id="u")
    duplex = DuplexLoop(room, speaker, queue_periods=8)
    duplex.start()
    frames = await _collect(duplex)
    duplex.stop()
    mic = np.concatenate([f.mic for f in frames]).astype(float)
    ref = np.concatenate([f.reference for f in frames]).astype(float)
    lag = 400 + PERIOD
    expected = np.rint(ref[: len(ref) - lag] * 10 ** (-6 / 20))
    assert np.max(np.abs(mic[lag:] - expected)) <= 1.0
    assert duplex.stats.frames == 100


async def test_a_consumer_thread_takes_every_frame_in_batches_and_sees_the_end() -> None:
    room = SimulatedRoom(160, speed=0, seed=5, duration_s=2.0)
    duplex = DuplexLoop(room, Speaker(160), queue_periods=50)
    duplex.start(asyncio.get_running_loop())
    batches: list[int] = []
    indices: list[int] = []

    def consume() -> None:
        while (frames := duplex.take(1.0)) is not None:
            batches.append(len(frames))
            indices.extend(f.index for f in frames)
            time.sleep(0.01)  # a slow consumer: the virtual-time room waits for it

    worker = threading.Thread(target=consume)
    worker.start()
    await asyncio.to_thread(worker.join, 30)
    duplex.stop()
    assert not worker.is_alive()
    assert indices == list(range(200))  # 2 s of 10 ms periods, none lost, in order
    assert max(batches) > 1  # frames that piled up came as one batch


async def test_take_waits_for_a_whole_batch_on_a_paced_device_and_gives_what_came_on_timeout() -> None:
    room = SimulatedRoom(160, speed=1.0, seed=5, duration_s=0.6)
    duplex = DuplexLoop(room, Speaker(160), queue_periods=50)
    duplex.start(asyncio.get_running_loop())
    batches: list[list[int]] = []
    short: list[int] = []

    def consume() -> None:
        short.append(len(duplex.take(0.025, at_least=20) or []))  # 20 periods cannot come in 25 ms
        while (frames := duplex.take(1.0, at_least=4)) is not None:
            batches.append([f.index for f in frames])

    worker = threading.Thread(target=consume)
    worker.start()
    await asyncio.to_thread(worker.join, 30)
    duplex.stop()
    assert not worker.is_alive()
    assert 0 < short[0] < 20
    indices = [i for batch in batches for i in batch]
    assert indices == list(range(short[0], 60))
    # the consumer woke once per four periods, not once per period (the end may be short)
    assert all(len(batch) >= 4 for batch in batches[:-1]), [len(b) for b in batches]
    assert len(batches) <= 60 // 4 + 1
