"""The ALSA backend on the C period loop: capture and playback on time whatever Python does.

API::

    backend = open_alsa_backend(160, loop="auto", rt_priority=20, capture_device=..., ...)
    # RtAlsaBackend where edgevoice.audio.io._rtloop is built, else AlsaBackend (pyalsaaudio)
    duplex = DuplexLoop(backend, speaker)          # the same loop and interface as before

The period loop runs in C (``audio/io/_rtloop.c``) on a thread of its own that never takes
the GIL: per period it reads one capture period with ``snd_pcm_readi``, writes one
playback period with ``snd_pcm_writei``, and publishes the pair — the capture's bytes
and the 16 kHz period it just wrote — into a lock-free ring. A decoder holding the GIL
for 300 ms no longer stops the capture: the periods wait in the ring (2.5 s by default)
and the duplex loop's Python thread takes them when it runs again.

This backend keeps :class:`~edgevoice.audio.io.alsa.AlsaBackend`'s conversions (channel
pick and mix, S32 → 16 bits, rates, the hardware loopback channel, every microphone of an
array with ``keep_mics``): they run on the duplex loop's thread, off the clock. What differs:

- **Reference.** ``read()`` returns, as ``Captured.loopback``, the 16 kHz period the C
  loop wrote in the same iteration as that capture (or the hardware loopback channel
  when ``reference_channel`` is set): sample-exact with the microphone by construction.
  The duplex loop uses it instead of the period it hands to :meth:`write`.
- **Playback** goes through a queue (``lookahead_periods``, 12 by default: 120 ms, longer
  than the GIL is held by the slowest engine step, pocketsphinx's final pass) that the C
  loop empties one period per period. :meth:`playback_wanted` says when it has room, so
  the speaker is only asked for a period the queue can take. The queue never delays what
  is heard: ``speaker.drop()`` discards what is queued there (:meth:`discard_playback`;
  the speaker's cursor takes those samples back), and so does sound queued into
  silence, so a drop is heard within a period plus the device buffer and a reply starts
  as soon as before. When Python is later than the queue, the C loop plays silence
  (``play_empty``): a gap in a reply, never an underrun.
- **Xruns** (-EPIPE from the device) are recovered in C (``snd_pcm_recover``), counted
  in ``stats`` and flagged on the next period (``Captured.discontinuity``), so the front
  end re-aligns its echo canceller. After an underrun the playback buffer is pre-filled
  to the same depth again, so the written reference keeps its fixed delay.
- **Real-time.** The loop thread asks for ``SCHED_FIFO`` at ``rt_priority`` and runs on a
  locked stack with locked rings; where that is not allowed (no ``LimitRTPRIO``, no
  ``CAP_SYS_NICE``, a cgroup without real-time runtime) it runs as a normal thread and
  one INFO line says why.
- A device error other than an xrun ends the C thread; ``read()`` raises
  :class:`DeviceLostError` and the duplex loop reopens with backoff, as before.

Where the extension is not built (no compiler or libasound2-dev at install),
:func:`open_alsa_backend` logs one INFO line and returns the pyalsaaudio backend.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
from collections import deque
from types import ModuleType
from typing import Any

import numpy as np

from edgevoice.audio.errors import AudioDeviceError, DeviceLostError, DeviceNotFoundError
from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.io.alsa import AlsaBackend, _is_not_found, list_pcm_names
from edgevoice.audio.io.backend import AudioBackend, Captured

_LOGGER = logging.getLogger(__name__)

LOOP_CHOICES = ("auto", "c", "python")
_INSTALL_HINT = ("install gcc, python3-dev and libasound2-dev and reinstall edgevoice "
                 "(./dev setup does)")
_READ_WAIT_S = 0.5
_STALLED_S = 5.0  # no capture period for this long: the device counts as lost


def load_rtloop() -> ModuleType | None:
    """The compiled period loop (``edgevoice.audio.io._rtloop``), or None when not built."""
    try:
        from edgevoice.audio.io import _rtloop
    except ImportError:
        return None
    return _rtloop


@functools.cache
def _log_fallback() -> None:
    _LOGGER.info("audio: the C period loop (edgevoice.audio.io._rtloop) is not built; capture and "
                 "playback run on the pyalsaaudio loop, which a busy Python process can make "
                 "late. To build it, %s", _INSTALL_HINT)


def open_alsa_backend(period_samples: int, *, loop: str = "auto", rt_priority: int = 20,
                      keep_mics: bool = False, **options: Any) -> AudioBackend:
    """The ALSA backend: on the C loop (``loop`` "c", or "auto" where it is built) or on
    pyalsaaudio ("python", or "auto" without the extension). ``options`` are
    :class:`AlsaBackend`'s (``keep_mics=True``: every microphone as ``Captured.mics``, on
    either loop)."""
    if loop not in LOOP_CHOICES:
        raise ValueError(f"loop must be one of {LOOP_CHOICES}, not {loop!r}")
    if loop != "python":
        module = load_rtloop()
        if module is not None:
            return RtAlsaBackend(period_samples, rt_priority=rt_priority, module=module,
                                 keep_mics=keep_mics, **options)
        if loop == "c":
            raise AudioDeviceError(f"audio.loop is 'c' but the C period loop is not built: "
                                   f"{_INSTALL_HINT}")
        _log_fallback()
    return AlsaBackend(period_samples, keep_mics=keep_mics, **options)


class RtAlsaBackend(AlsaBackend):
    """:class:`AlsaBackend` on the C period loop (see the module docstring)."""

    def __init__(self, period_samples: int, *, rt_priority: int = 20, lookahead_periods: int = 12,
                 ring_periods: int = 256, module: ModuleType | None = None,
                 keep_mics: bool = False, **options: Any) -> None:
        if options.get("pcm_factory") is not None:
            raise ValueError("the C loop opens its PCMs itself; pcm_factory is for AlsaBackend")
        super().__init__(period_samples, keep_mics=keep_mics, **options)
        module = module if module is not None else load_rtloop()
        if module is None:
            raise AudioDeviceError(f"the C period loop is not built: {_INSTALL_HINT}")
        self._module = module
        self.rt_priority = max(0, int(rt_priority))
        # Virtual time (a plain file, paced=False): in step with Python, one period ahead.
        self.lookahead_periods = max(1, int(lookahead_periods)) if self.paced else 1
        self.ring_periods = max(4, int(ring_periods))
        self._loop: Any = None
        self._refs: deque[tuple[Pcm, bool]] = deque()
        self._delay_frames = 0
        self._play_rejected = 0
        self._rt_reported = False
        self.last_stats: dict[str, Any] = {}
        # Benchmarks: when a list, every period's lateness (ns) is appended to it.
        self.lateness_ns: list[int] | None = None
        self.first_done_ns = 0  # CLOCK_MONOTONIC ns when the first period was read
        self._wrote = True  # a period was written since the last read (virtual time's step)
        self._silence = np.zeros(period_samples, np.int16)

    # --- the backend interface --------------------------------------------------------------

    def open(self) -> None:
        if self._loop is not None:
            return
        loop = self._module.Loop(
            capture_device=self.capture_device, playback_device=self.playback_device,
            capture_channels=self.capture_channels, capture_rate=self.capture_rate,
            sample_bytes=self._dtype.itemsize, capture_period=self.capture_period_frames,
            playback_channels=self.playback_channels, playback_rate=self.playback_rate,
            playback_period=self.playback_period_frames, reference_samples=self.period_samples,
            buffer_periods=self.buffer_periods,
            prefill_periods=min(self.prefill_periods, self.buffer_periods - 1),
            ring_periods=self.ring_periods, playback_ring_periods=2 * self.lookahead_periods + 2,
            rt_priority=self.rt_priority, paced=self.paced)
        try:
            negotiated = loop.start()
        except OSError as err:
            raise self._open_error(err) from err
        self._loop = loop
        self._actual_capture_rate = int(negotiated["capture_rate"])
        self._actual_playback_rate = int(negotiated["playback_rate"])
        self._playback_buffer = int(negotiated["playback_buffer"])
        if self._actual_capture_rate != self.capture_rate:
            _LOGGER.warning("%s runs at %d Hz, not %d Hz: converting from its rate",
                            self.capture_device, self._actual_capture_rate, self.capture_rate)
        self._init_pipeline()
        self._direct = False  # the reference rides with every period: always a Captured
        self._refs.clear()
        silence = self._silence
        for _ in range(self.lookahead_periods):  # the queue starts full, with silence
            loop.write(self._playback_bytes(silence), silence.tobytes())
        self._wrote = True
        _LOGGER.info("ALSA open on the C loop: capture %s %d ch %d Hz %s, playback %s %d ch %d Hz, "
                     "buffer %d frames, lookahead %d periods", self.capture_device,
                     self.capture_channels, self._actual_capture_rate, self.capture_format,
                     self.playback_device, self.playback_channels, self._actual_playback_rate,
                     self._playback_buffer, self.lookahead_periods)

    def read_raw(self) -> Captured | bytes:
        return self.read()

    def read(self) -> Captured:
        loop = self._loop
        if loop is None:
            raise DeviceLostError(f"{self.name} is not open")
        if not self.paced and not self._wrote:
            # virtual time runs in step with writes: a reader that writes nothing plays silence
            self.write(self._silence)
        self._wrote = False
        waited = 0.0
        while not self._ready:
            try:
                item = loop.read(_READ_WAIT_S)
            except OSError as err:
                raise DeviceLostError(f"the ALSA device {self.name} stopped working "
                                      f"({err.strerror}, {self._where(err)}); reconnecting") from err
            except EOFError as err:
                raise DeviceLostError(f"{self.name} was closed") from err
            if item is None:
                waited += _READ_WAIT_S
                if waited >= _STALLED_S:
                    raise DeviceLostError(f"the ALSA capture device {self.capture_device!r} gave no "
                                          f"audio for {waited:.0f} s; reconnecting")
                continue
            self._take(item)
            if not self.paced and not self._ready:
                # A native period that gave no 16 kHz period yet (22.05 kHz: 220 frames make
                # 159 or 160 samples): virtual time waits for one period out per period in,
                # so supply it, or the loop and this reader wait for each other for ever. It
                # pays for the period just taken, not for the next read(): _wrote stays as is.
                loop.write(self._playback_bytes(self._silence), self._silence.tobytes())
        mic, loopback = self._ready.popleft()
        written, discontinuity = self._refs.popleft() if self._refs else (self._silence, False)
        return Captured(mic, written if loopback is None else loopback, discontinuity,
                        self._ready_mics.popleft() if self._ready_mics else None)

    def playback_wanted(self) -> int:
        loop = self._loop
        return 0 if loop is None else max(0, self.lookahead_periods - int(loop.play_queued()))

    def write(self, pcm: Pcm) -> None:
        loop = self._loop
        if loop is None:
            raise DeviceLostError(f"{self.name} is not open")
        self._wrote = True
        data = self._playback_bytes(pcm)
        if not data:
            return
        if not loop.write(data, pcm.astype("<i2", copy=False).tobytes()):
            self._play_rejected += 1  # the queue is full: only when write() ignores playback_wanted

    def discard_playback(self) -> int:
        loop = self._loop
        return int(loop.discard()) * self.period_samples if loop is not None else 0

    def output_latency_samples(self) -> int:
        loop = self._loop
        if loop is None:
            return 0
        queued = int(loop.play_queued()) * self.period_samples
        in_device = max(0, self._delay_frames) * SAMPLE_RATE // max(1, self._actual_playback_rate)
        return queued + in_device

    def close(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        self.last_stats = dict(loop.stats())
        if not loop.stop(5.0):
            _LOGGER.warning("the C audio loop did not stop within 5 s (blocked in the device); "
                            "leaving it behind")

    # --- the C loop's figures ---------------------------------------------------------------------

    def loop_stats(self) -> dict[str, Any]:
        """The C loop's counters: periods, overruns, underruns, play_empty, ring_dropped,
        late_histogram (counts below late_bounds_ms, then above), late_ge_buffer
        (would-be xruns), late_max_ms, work_max_ms, thread_cpu_s, rt_error, mlock_error."""
        loop = self._loop
        return dict(loop.stats()) if loop is not None else dict(self.last_stats)

    def inject_capture_error(self, code: int, count: int = 1) -> None:
        """Tests: the next ``count`` capture reads fail with ``code`` (a negative errno),
        as a failing card's would."""
        if self._loop is None:
            raise DeviceLostError(f"{self.name} is not open")
        self._loop.inject(code, count)

    # --- internals --------------------------------------------------------------------------------

    def _take(self, item: tuple[int, bytes, bytes, int, int, int, int]) -> None:
        _index, capture, reference, flags, delay, late, done = item
        module = self._module
        if flags & module.FLAG_FIRST:
            self.first_done_ns = done
            if not self._rt_reported:
                self._report_realtime()
        if self.lateness_ns is not None:
            self.lateness_ns.append(late)
        discontinuity = bool(flags & (module.FLAG_OVERRUN | module.FLAG_UNDERRUN
                                      | module.FLAG_RING_DROPPED))
        if flags & module.FLAG_OVERRUN:
            self.stats.overruns = int(self._loop.stats()["overruns"])
            self._overrun_log.note(self.stats.overruns)
        if flags & module.FLAG_UNDERRUN:
            self.stats.underruns = int(self._loop.stats()["underruns"])
            self._underrun_log.note(self.stats.underruns)
        if flags & module.FLAG_RING_DROPPED:
            self.stats.extra["ring_dropped"] = int(self._loop.stats()["ring_dropped"])
        self._delay_frames = delay
        before = len(self._ready)
        self._push_capture(capture)
        written = np.frombuffer(reference, np.int16)
        # One native period gives one 16 kHz period (the polyphase resampler's contract);
        # should it ever give none or two, the reference queue still pairs in order.
        for produced in range(len(self._ready) - before):
            self._refs.append((written, discontinuity and produced == 0))

    def _report_realtime(self) -> None:
        self._rt_reported = True
        stats = self._loop.stats()
        rt_error, mlock_error = int(stats["rt_error"]), int(stats["mlock_error"])
        if rt_error == 0 and mlock_error == 0:
            _LOGGER.info("audio loop thread: SCHED_FIFO priority %d, %d KiB locked in memory",
                         self.rt_priority, int(stats["locked_bytes"]) // 1024)
            return
        reasons = []
        if rt_error > 0:
            reasons.append(f"SCHED_FIFO priority {self.rt_priority} refused ({os.strerror(rt_error)}; "
                           "grant it with LimitRTPRIO or CAP_SYS_NICE, and real-time runtime in "
                           "the cgroup)")
        elif rt_error < 0:
            reasons.append("SCHED_FIFO not asked for (audio.rt_priority = 0)")
        if mlock_error > 0:
            reasons.append(f"memory not locked ({os.strerror(mlock_error)}; raise LimitMEMLOCK)")
        _LOGGER.info("audio loop thread runs at normal priority: %s", "; ".join(reasons))

    def _where(self, err: OSError) -> str:
        where = err.args[2] if len(err.args) > 2 else "capture"
        return f"{where} {self.capture_device if where == 'capture' else self.playback_device!r}"

    def _open_error(self, err: OSError) -> AudioDeviceError:
        where = err.args[2] if len(err.args) > 2 else "capture"
        device = self.capture_device if where == "capture" else self.playback_device
        message = err.strerror or str(err)
        if err.errno in (errno.ENOENT, errno.ENODEV) or _is_not_found(message):
            try:
                known = list_pcm_names(where)
            except Exception:  # pyalsaaudio missing: the list is only a hint
                known = []
            listing = ", ".join(known) if known else "none"
            return DeviceNotFoundError(
                f"no ALSA {where} device called {device!r} ({message}). Devices that exist: "
                f"{listing}. See them with 'edgevoice devices' and set audio.{where}_device.")
        return AudioDeviceError(
            f"cannot open ALSA {where} device {device!r} ({message}). Check what it accepts with "
            "'edgevoice devices'.")

