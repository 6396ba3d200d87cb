"""The duplex loop: one real-time thread, one capture period in, one playback period out.

API::

    duplex = DuplexLoop(backend, speaker, queue_periods=200, reconnect_max_s=10.0,
                        on_event=lambda type_, data: bus.publish(type_, data))
    duplex.start(asyncio.get_running_loop())   # opens the backend (errors raise here)
    async for frame in duplex.frames():        # DuplexFrame(index, mic, reference)
        ...
    # or, from a consumer thread: frames = duplex.take(timeout)  (batches; None at the end)
    duplex.stop()                              # joins the thread, closes the backend
    duplex.stats                               # DuplexStats snapshot

Per iteration the thread reads one capture period, takes ``speaker.next_period()``
(queued speech, or silence), writes it, tells the speaker how much of it still sits in
the device buffer (``backend.output_latency_samples()``), and hands
``DuplexFrame(index, mic, reference)`` to the event loop. The reference is what was
written in that iteration (aligned to the mic by construction, with the device's fixed
delay) or, when the backend captures a hardware loopback channel, that channel. A
backend that keeps a microphone array's channels (``Captured.mics``) has them arrive as
``DuplexFrame.mics``, from the same period.

The thread does as little as it can after each wake-up: it wakes 100 times a second
into cold caches, where every line costs several times what it costs in a burst. It
queues plain ``(index, mic, reference, ...)`` tuples, and where the backend hands over the
capture's bytes (:meth:`AudioBackend.read_raw`: 16 kHz mono S16) the mic array and the
``DuplexFrame`` are made when the consumer takes the frames, a batch at a time.

Hand-over. Frames go through a bounded queue (``queue_periods``). With a paced backend
(real devices, the room at speed > 0) the audio thread never blocks on it: when the
consumer falls behind the oldest frame is dropped and counted (``audio.queue_dropped``,
rate-limited). With an unpaced backend (the room at speed 0, WAV without pacing) time is
virtual, so the thread waits for room instead and nothing is lost. Only the event-loop
thread touches asyncio objects: the thread wakes the consumer with
``call_soon_threadsafe``.

Events go to ``on_event(type, data)``, called on the event-loop thread:
``audio.device_lost`` {device, code, message}; ``audio.device_restored`` {device,
down_s, attempts}; ``audio.xrun`` {device, overruns, underruns, new} at most once per
``xrun_event_interval_s``; ``audio.queue_dropped`` {dropped, new}, likewise.
A lost device (any ``AudioDeviceError``, or an unexpected error in the backend) is
closed and reopened with exponential backoff capped at ``reconnect_max_s``; the loop
never exits for it. It ends only on :meth:`stop` or when a finite source raises
``EndOfInput``; then :meth:`frames` finishes after the queued frames.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgevoice.audio.errors import AudioDeviceError, EndOfInput
from edgevoice.audio.frames import SAMPLE_RATE, DuplexFrame, MicPeriods, Pcm
from edgevoice.audio.io.backend import AudioBackend
from edgevoice.audio.speaking.playback import Speaker

_LOGGER = logging.getLogger(__name__)

# The duplex loop's event types, defined here (edgevoice.device.events.EventType names
# these constants; audio/ does not import device/).
EVENT_DEVICE_LOST = "audio.device_lost"
EVENT_DEVICE_RESTORED = "audio.device_restored"
EVENT_XRUN = "audio.xrun"
EVENT_QUEUE_DROPPED = "audio.queue_dropped"

EventCallback = Callable[[str, dict[str, Any]], None]

# What the audio thread queues: (index, mic array or its S16 bytes, reference,
# discontinuity, every mic of an array or None).
_Item = tuple[int, Pcm | bytes, Pcm, bool, MicPeriods | None]


def _frame(item: _Item) -> DuplexFrame:
    """The frame of one queued item (on the consumer's thread)."""
    index, mic, reference, discontinuity, mics = item
    if isinstance(mic, bytes):
        return DuplexFrame(index, np.frombuffer(mic, np.int16), reference, discontinuity)
    return DuplexFrame(index, mic, reference, discontinuity, mics)


@dataclass(frozen=True, slots=True)
class DuplexStats:
    """Counters of one duplex loop (a snapshot)."""

    frames: int  # frames handed to the consumer queue
    dropped: int  # frames dropped because the consumer fell behind
    queued: int  # frames waiting in the queue now
    overruns: int  # capture overruns the backend recovered from
    underruns: int  # playback underruns the backend recovered from
    device_lost: int  # times the device went away
    reopened: int  # times it was reopened
    max_iteration_ms: float  # worst read+write+hand-over wall time (includes the wait in read)
    max_iteration_cpu_ms: float  # worst CPU time of one iteration (the work alone)
    thread_cpu_s: float  # CPU time the audio thread used

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


class DuplexLoop:
    """Drives a backend and a speaker on one clock from a real-time thread."""

    def __init__(
        self,
        backend: AudioBackend,
        speaker: Speaker,
        *,
        queue_periods: int = 200,
        reconnect_max_s: float = 10.0,
        reconnect_initial_s: float = 0.1,
        on_event: EventCallback | None = None,
        xrun_event_interval_s: float = 1.0,
    ) -> None:
        if speaker.period_samples != backend.period_samples:
            raise ValueError(f"speaker period ({speaker.period_samples}) and backend period "
                             f"({backend.period_samples}) differ")
        self.backend = backend
        self.speaker = speaker
        speaker.discard_queued = backend.discard_playback  # drop() reaches a backend's own queue
        self.queue_periods = max(1, int(queue_periods))
        self.reconnect_max_s = float(reconnect_max_s)
        self.reconnect_initial_s = min(float(reconnect_initial_s), self.reconnect_max_s)
        self.on_event = on_event
        self.xrun_event_interval_s = float(xrun_event_interval_s)
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)
        # A consumer thread (take) waits on a plain lock that the audio thread releases
        # once enough frames are queued: one C call on the audio thread, where a
        # Condition's notify runs a dozen lines of Python. Held ("no signal") whenever
        # _sync_wanted is set; both change only under _lock.
        self._signal = threading.Lock()
        self._signal.acquire()
        self._sync_wanted = 0  # frames a consumer thread waits for (take); 0: none waits
        self._queue: deque[_Item] = deque()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._consumer_waiting = False
        self._finished = False
        self._index = 0
        self._frames = 0
        self._dropped = 0
        self._reported_dropped = 0
        self._last_drop_event = float("-inf")
        self._reported_xruns = 0
        self._last_xrun_event = float("-inf")
        self._device_lost = 0
        self._reopened = 0
        self._max_iteration = 0.0
        self._max_iteration_cpu = 0.0
        self._thread_cpu = 0.0
        self._cpu_start = 0.0

    # --- control ------------------------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Open the backend (raising its errors here, e.g. a wrong device name) and start
        the audio thread. ``loop``: the event loop that consumes frames (default: the
        running loop)."""
        if self._thread is not None:
            raise RuntimeError("the duplex loop is already started")
        self._loop = loop if loop is not None else asyncio.get_running_loop()
        self.backend.open()
        self._thread = threading.Thread(target=self._run, name="edgevoice-audio", daemon=True)
        self._thread.start()
        _LOGGER.info("duplex loop started on %s (%d samples per period, %s)", self.backend.name,
                     self.backend.period_samples, "paced" if self.backend.paced else "virtual time")

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread, wait for it, close the backend. Safe to call twice."""
        self._stopping.set()
        with self._lock:
            self._space.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                _LOGGER.warning("the audio thread did not stop within %.1f s (blocked in the "
                                "device); leaving it behind", timeout)
        try:
            self.backend.close()
        except Exception:  # closing a broken device must not stop the shutdown
            _LOGGER.debug("closing %s failed", self.backend.name, exc_info=True)
        self._finish()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def audio_time_s(self) -> float:
        """Audio clock: seconds of capture read so far (the next frame's ``start_s``)."""
        return self._index * self.backend.period_samples / SAMPLE_RATE

    @property
    def stats(self) -> DuplexStats:
        with self._lock:
            queued = len(self._queue)
        return DuplexStats(
            frames=self._frames,
            dropped=self._dropped,
            queued=queued,
            overruns=self.backend.stats.overruns,
            underruns=self.backend.stats.underruns,
            device_lost=self._device_lost,
            reopened=self._reopened,
            max_iteration_ms=self._max_iteration * 1000.0,
            max_iteration_cpu_ms=self._max_iteration_cpu * 1000.0,
            thread_cpu_s=self._thread_cpu,
        )

    # --- the consumer (event-loop thread) -------------------------------------------------------

    async def frames(self) -> AsyncIterator[DuplexFrame]:
        """Every frame the audio thread produces, in order (one consumer). Ends after
        :meth:`stop` or the end of a finite input, once the queue is drained."""
        if self._wake is None:
            self._wake = asyncio.Event()
        wake = self._wake
        while True:
            with self._lock:
                if self._queue:
                    item: _Item | None = self._queue.popleft()
                    self._space.notify()
                else:
                    item = None
                    if self._finished:
                        return
                    wake.clear()
                    self._consumer_waiting = True
            if item is None:
                await wake.wait()
                continue
            yield _frame(item)

    def take(self, timeout: float, at_least: int = 1) -> list[DuplexFrame] | None:
        """For a consumer *thread* (instead of :meth:`frames`): every frame queued so far,
        once ``at_least`` are queued, waiting up to ``timeout`` seconds (then whatever
        is there); ``[]`` on timeout with nothing queued, ``None`` once the loop has
        finished and the queue is drained. Taking frames in batches spares the consumer
        a wake-up per period, and work done in one burst runs on warm caches: an idle
        front end costs a third less CPU in batches of three periods than one by one."""
        wanted = max(1, min(at_least, self.queue_periods))
        deadline = time.monotonic() + timeout
        signal = self._signal
        while True:
            with self._lock:
                if len(self._queue) >= wanted or self._finished:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                signal.acquire(blocking=False)  # drop a signal left over from a timeout
                self._sync_wanted = wanted
            signal.acquire(timeout=remaining)
        with self._lock:
            self._sync_wanted = 0
            if not self._queue:
                return None if self._finished else []
            items = list(self._queue)
            self._queue.clear()
            self._space.notify_all()
        return [_frame(item) for item in items]

    def _wake_consumer(self) -> None:
        wake, loop = self._wake, self._loop
        if wake is not None and loop is not None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # the event loop is closed: nobody is listening
                pass

    def _finish(self) -> None:
        with self._lock:
            self._finished = True
            self._release_consumer()
            waiting = self._consumer_waiting
            self._consumer_waiting = False
        if waiting:
            self._wake_consumer()

    def _emit(self, type_: str, data: dict[str, Any]) -> None:
        callback, loop = self.on_event, self._loop
        if callback is None or loop is None:
            return
        try:
            loop.call_soon_threadsafe(callback, type_, data)
        except RuntimeError:
            pass

    # --- the audio thread -------------------------------------------------------------------------

    def _run(self) -> None:
        self._cpu_start = time.thread_time()
        try:
            while not self._stopping.is_set():
                try:
                    self._iterate()
                except EndOfInput as err:
                    _LOGGER.info("audio input ended: %s", err)
                    break
                except AudioDeviceError as err:
                    self._recover(err)
                except Exception as err:  # a bug or an unexpected backend failure
                    _LOGGER.exception("the audio loop failed on %s; reopening", self.backend.name)
                    self._recover(err)
        finally:
            self._thread_cpu = time.thread_time() - self._cpu_start
            self._finish()

    def _iterate(self) -> None:
        # One straight run, no helper calls on the usual path (see the module docstring).
        started = time.perf_counter()
        cpu_started = time.thread_time()
        backend, speaker = self.backend, self.speaker
        captured = backend.read_raw()
        wanted = backend.playback_wanted()
        if wanted == 1:
            out = speaker.next_period()
            backend.write(out)
        else:  # a backend that plays from its own queue (rtloop): fill it, or nothing
            out = speaker.silence
            for _ in range(wanted):
                backend.write(speaker.next_period())
        speaker.set_output_latency(backend.output_latency_samples())
        item: _Item
        if isinstance(captured, bytes):
            item = (self._index, captured, out, False, None)
        else:
            loopback = captured.loopback
            item = (self._index, captured.mic, out if loopback is None else loopback,
                    captured.discontinuity, captured.mics)
        self._index += 1
        queue = self._queue
        with self._lock:
            elapsed = time.perf_counter() - started  # without any wait for room
            if len(queue) >= self.queue_periods and not self._make_room():
                return
            queue.append(item)
            self._frames += 1
            wanted = self._sync_wanted
            if wanted and len(queue) >= wanted:
                self._sync_wanted = 0
                self._signal.release()
            wake = self._consumer_waiting
            self._consumer_waiting = False
        stats = backend.stats
        if (stats.overruns + stats.underruns != self._reported_xruns
                or self._dropped != self._reported_dropped):
            self._report_counters()
        cpu_now = time.thread_time()
        self._max_iteration = max(self._max_iteration, elapsed)
        self._max_iteration_cpu = max(self._max_iteration_cpu, cpu_now - cpu_started)
        self._thread_cpu = cpu_now - self._cpu_start
        if wake:
            # Last, so this thread is back in read() (without the GIL) when the
            # event loop wakes up to take the frame.
            self._wake_consumer()

    def _release_consumer(self) -> None:
        """Wake a consumer thread waiting in :meth:`take` (called holding the lock)."""
        if self._sync_wanted:
            self._sync_wanted = 0
            self._signal.release()

    def _make_room(self) -> bool:
        """The queue is full (called holding the lock): drop the oldest frame (paced) or
        wait for the consumer (virtual time). False when stopping while waiting."""
        if self.backend.paced:
            self._queue.popleft()
            self._dropped += 1
            return True
        while len(self._queue) >= self.queue_periods and not self._stopping.is_set():
            self._space.wait(0.5)
        return not self._stopping.is_set()

    def _report_counters(self) -> None:
        stats = self.backend.stats
        xruns = stats.overruns + stats.underruns
        dropped = self._dropped
        if xruns == self._reported_xruns and dropped == self._reported_dropped:
            return
        now = time.monotonic()
        if xruns != self._reported_xruns and now - self._last_xrun_event >= self.xrun_event_interval_s:
            self._emit(EVENT_XRUN, {"device": self.backend.name, "overruns": stats.overruns,
                                    "underruns": stats.underruns,
                                    "new": xruns - self._reported_xruns})
            self._reported_xruns = xruns
            self._last_xrun_event = now
        if dropped != self._reported_dropped and now - self._last_drop_event >= self.xrun_event_interval_s:
            _LOGGER.warning("the audio consumer fell behind: %d frames dropped so far", dropped)
            self._emit(EVENT_QUEUE_DROPPED, {"dropped": dropped,
                                             "new": dropped - self._reported_dropped})
            self._reported_dropped = dropped
            self._last_drop_event = now

    def _recover(self, err: Exception) -> None:
        """Close the device, report it lost, reopen with capped exponential backoff."""
        self._device_lost += 1
        name = self.backend.name
        code = getattr(err, "code", type(err).__name__)
        message = getattr(err, "message", str(err))
        _LOGGER.warning("audio device %s lost (%s); retrying", name, message)
        self._emit(EVENT_DEVICE_LOST, {"device": name, "code": code, "message": message})
        lost_at = time.monotonic()
        try:
            self.backend.close()
        except Exception:
            _LOGGER.debug("closing the lost device failed", exc_info=True)
        delay = self.reconnect_initial_s
        attempts = 0
        while not self._stopping.wait(delay):
            attempts += 1
            try:
                self.backend.open()
            except Exception as open_err:
                _LOGGER.debug("reopening %s failed (attempt %d): %s", name, attempts, open_err)
                try:
                    self.backend.close()
                except Exception:
                    _LOGGER.debug("closing after a failed reopen failed", exc_info=True)
                delay = min(delay * 2.0, self.reconnect_max_s)
                continue
            self._reopened += 1
            self.backend.stats.reopened += 1
            down = time.monotonic() - lost_at
            _LOGGER.warning("audio device %s restored after %.1f s (%d attempts)", name, down,
                            attempts)
            self._emit(EVENT_DEVICE_RESTORED, {"device": name, "down_s": round(down, 3),
                                               "attempts": attempts})
            return
