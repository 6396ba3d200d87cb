"""The per-frame front end: echo canceller → VAD → endpointer/wake word → ASR.

It runs on one worker thread of its own (vosk decodes in batches of a few hundred
milliseconds; that must never stall the event loop that streams the agent's reply
into TTS). The conversation hands it each :class:`DuplexFrame` and gets back a
:class:`FrontResult`: the hearing events, the speech probabilities of the VAD
windows that ended in this frame (what the barge-in detector decides on), and
levels. Controls that change the listener (push-to-talk, mute, follow-up window)
are queued and applied on the worker thread before the next frame, so the
listener is only ever touched by one thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import queue
import threading
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from edgevoice.audio.aec.base import PERIOD_SAMPLES as AEC_PERIOD
from edgevoice.audio.aec.base import AecStats, EchoCanceller
from edgevoice.audio.array.hearing import ArrayHearing
from edgevoice.audio.frames import DuplexFrame, Pcm, dbfs, unchanging
from edgevoice.audio.hearing.endpoint import SpeechStarted
from edgevoice.audio.hearing.events import FinalPending, HearingEvent, PartialTranscript
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.vad import VadWindow, VoiceActivity
from edgevoice.device.runtime.bargein import BargeIn, BargeInMonitor

_LOGGER = logging.getLogger(__name__)

Control = Callable[[Listener], list[HearingEvent]]


class WindowRecorder(VoiceActivity):
    """A :class:`VoiceActivity` that also keeps the windows it scored, so the barge-in
    detector sees the same probabilities the endpointer used (the VAD runs once)."""

    def __init__(self, inner: VoiceActivity) -> None:
        super().__init__(inner.engine, inner.gate.threshold, inner.gate.release_threshold, inner.quiet)
        self.recent: list[VadWindow] = []

    def process(self, pcm: Pcm, heard: Pcm | None = None) -> list[VadWindow]:
        windows = super().process(pcm, heard)
        self.recent.extend(windows)
        return windows

    def take(self) -> list[VadWindow]:
        windows, self.recent = self.recent, []
        return windows


@dataclass(frozen=True, slots=True)
class FrontResult:
    index: int
    end_s: float
    events: tuple[HearingEvent, ...]
    windows: tuple[VadWindow, ...]
    mic: Pcm = field(repr=False)
    far_end_active: bool
    aec: AecStats | None = field(default=None)  # as of the last VAD window
    barge_in: BargeIn | None = None  # the person took over the reply in this frame
    talker_direction_deg: float | None = None  # a microphone array's smoothed estimate

    def levels(self) -> dict[str, Any]:
        """What telemetry reports of the audio (the MQTT bridge's key names). Computed
        when asked, not per frame: telemetry reads it every few seconds."""
        levels: dict[str, Any] = {"input_dbfs": round(dbfs(self.mic), 1)}
        if self.talker_direction_deg is not None:
            levels["talker_direction_deg"] = round(self.talker_direction_deg)
        if self.aec is not None:
            erle, delay = self.aec.erle_db, self.aec.delay_ms
            levels["echo_reduction_db"] = None if erle is None else round(erle, 1)
            levels["echo_delay_ms"] = None if delay is None else round(delay, 1)
            levels["echo_reference_ok"] = self.aec.reference_ok
        return levels


class FrontEnd:
    """Echo cancellation and hearing for one stream. Not thread-safe except
    :meth:`control`, which may be called from any thread.

    With a microphone ``array`` the frames' ``mics`` go through it (the echo cancelled
    per mic or after the beam: :mod:`edgevoice.audio.array.hearing`) instead of
    ``canceller``, and each ``input.speech.started`` carries the talker's direction."""

    def __init__(self, listener: Listener, canceller: EchoCanceller | None,
                 barge_in: BargeInMonitor | None = None, array: ArrayHearing | None = None) -> None:
        if array is not None and canceller is not None:
            raise ValueError("with an array the echo cancellers are the array's: pass canceller=None")
        self.listener = listener
        self.canceller = canceller
        self.barge_in = barge_in
        self.array = array
        self._no_mics_seen = False
        self._recorder = WindowRecorder(listener.vad)
        listener.vad = self._recorder
        self._controls: deque[Control] = deque()
        # Called on this thread with every echo-cancelled frame (its end time and samples):
        # a surface that streams the microphone (the ESPHome API's voice assistant).
        self.taps: list[Callable[[float, Pcm], None]] = []
        self._lock = threading.Lock()
        self._stats: AecStats | None = None
        # The last reference found silent that cannot change (an array that owns its
        # data, read-only): the speaker's idle silence, the same object every period,
        # so the idle front end need not scan it for sound 100 times a second.
        self._silent_reference: Pcm | None = None
        self.xrun_realigned = 0  # times the canceller was reset after an xrun

    def control(self, action: Control) -> None:
        """Queue a change to the listener (applied before the next frame)."""
        with self._lock:
            self._controls.append(action)

    def run_on_thread(self, action: Callable[[], object]) -> None:
        """Run ``action`` on the front-end thread before its next frame: it owns the
        listener and the barge-in detector, which nothing else may touch."""

        def run(_: Listener) -> list[HearingEvent]:
            action()
            return []

        self.control(run)

    def process(self, frame: DuplexFrame, *, in_reply: bool = False, idle: bool = False) -> FrontResult:
        """One frame through the canceller and the listener; while a reply is in flight
        (``in_reply``) the barge-in detector sees the VAD windows and the partial words.
        ``idle`` (nobody talking, nothing playing) lets the VAD skip a quiet room."""
        self._recorder.economy = idle
        events: list[HearingEvent] = []
        if self._controls:  # rarely anything: the lock only then
            with self._lock:
                controls = list(self._controls)
                self._controls.clear()
            for action in controls:
                events.extend(action(self.listener))
        if frame.discontinuity and (self.canceller is not None or self.array is not None):
            # An xrun moved the echo path's alignment: estimate the delay afresh rather
            # than cancel against a reference that is no longer where the filter has it.
            if self.canceller is not None:
                self.canceller.reset()
            if self.array is not None:
                self.array.reset_echo()
            self.xrun_realigned += 1
        far_end = self._far_end(frame.reference)
        if self.array is not None:
            clean, linear = self._through_array(frame, far_end)
        elif self.canceller is None:
            clean, linear = frame.mic, None
        else:
            clean, linear = self._cancel(frame.mic, frame.reference)
        for tap in self.taps:
            tap(frame.end_s, clean)
        # while the device speaks, the barge-in decision goes before the recognizer
        self.listener.hold_recognition = (in_reply and self.barge_in is not None
                                          and self.barge_in.listening_for_speech)
        heard = self.listener.process(clean, linear)
        if self.array is not None:
            heard = [self._with_direction(event) for event in heard]
        events.extend(heard)
        windows = tuple(self._recorder.take())
        taken: BargeIn | None = None
        if windows:
            # The canceller's figures are read once per VAD window (~32 ms), not per
            # period: the barge-in detector decides per window, telemetry every few s.
            if self.canceller is not None:
                self._stats = self.canceller.stats
            elif self.array is not None:
                self._stats = self.array.stats
            if self.barge_in is not None:
                taken = self.barge_in.update(windows, self._stats, far_end, in_reply=in_reply)
        if self.barge_in is not None and in_reply and taken is None:
            for event in events:
                if isinstance(event, PartialTranscript):
                    taken = taken or self.barge_in.words(len(event.text.split()))
        direction = None if self.array is None else self.array.smoothed_deg
        return FrontResult(frame.index, frame.end_s, tuple(events), windows, frame.mic, far_end,
                           self._stats, taken, direction)

    @property
    def echo_canceller(self) -> EchoCanceller | None:
        """The canceller whose figures the barge-in detector reads (with an array: the
        first of its cancellers)."""
        if self.array is not None:
            return self.array.cancellers[0] if self.array.cancellers else None
        return self.canceller

    def _through_array(self, frame: DuplexFrame, far_end: bool) -> tuple[Pcm, Pcm | None]:
        array = self.array
        assert array is not None
        if frame.mics is None:
            # A backend that gave only the mix (a misassembly): hear it, uncancelled,
            # rather than nothing; say so once.
            if not self._no_mics_seen:
                self._no_mics_seen = True
                _LOGGER.warning("the array is configured but the audio backend gives no per-mic "
                                "channels: hearing the mix without echo cancellation")
            return frame.mic, None
        return array.process(frame.mics, frame.reference, speech=self.listener.vad.gate.speech,
                             far_end=far_end)

    def _with_direction(self, event: HearingEvent) -> HearingEvent:
        """``input.speech.started`` with the talker's direction, as of the onset."""
        if not isinstance(event, SpeechStarted):
            return event
        assert self.array is not None
        estimate = self.array.current_direction() or self.array.last_segment
        if estimate is None:
            return event
        return dataclasses.replace(event, direction_deg=round(estimate.direction_deg, 1))

    def _far_end(self, reference: Pcm) -> bool:
        """Whether the reference carries any sound."""
        if reference is self._silent_reference:
            return False
        sounding = bool(reference.any())
        if not sounding and unchanging(reference):
            self._silent_reference = reference
        return sounding

    def _cancel(self, mic: Pcm, reference: Pcm) -> tuple[Pcm, Pcm | None]:
        """The canceller's output and, where the engine has one, its linear output (before
        residual-echo suppression: what the recognizer hears). The cancellers work in
        10 ms periods; a 20 ms duplex period is two."""
        canceller = self.canceller
        assert canceller is not None
        if len(mic) == AEC_PERIOD:
            return canceller.process(mic, reference), canceller.linear
        outs: list[Pcm] = []
        linears: list[Pcm] = []
        for i in range(0, len(mic), AEC_PERIOD):
            outs.append(canceller.process(mic[i:i + AEC_PERIOD], reference[i:i + AEC_PERIOD]))
            linear = canceller.linear
            if linear is not None:
                linears.append(linear)
        return np.concatenate(outs), np.concatenate(linears) if len(linears) == len(outs) else None

    def close(self) -> None:
        self.listener.close()
        if self.canceller is not None:
            self.canceller.close()
        if self.array is not None:
            self.array.close()


# Unless someone is talking or the device is, the front end takes the audio in bursts
# of this many periods: speech is noticed up to 70 ms later (no audio is lost: every
# period is heard, in order, on the audio clock), and the front end costs a third of
# what it costs one period per wake-up, where cold caches dominate (idle daemon, quiet
# room: 2.7 % of a core in bursts of 4, 1.8 % in bursts of 8) — also while the agent
# thinks and piper renders the first sentence, which then shares the CPU with less.
# In a turn (endpointing) and while anything plays (barge-in) it takes every period as
# it comes, so neither decision is late.
IDLE_BATCH_PERIODS = 8


class FrameSource(Protocol):
    """Where the front end takes frames from: :meth:`DuplexLoop.take`."""

    def take(self, timeout: float, at_least: int = 1) -> list[DuplexFrame] | None: ...


class FrontEndThread:
    """The front end's own thread: takes the duplex loop's frames in batches (one at a
    time while someone talks or anything plays), runs :meth:`FrontEnd.process` on each,
    and hands what it heard to the event loop through :attr:`results` (``None``: the
    frames ended). Only this thread touches the listener and the barge-in monitor."""

    def __init__(self, front: FrontEnd, duplex: FrameSource, loop: asyncio.AbstractEventLoop, *,
                 tick: Callable[[], None], in_reply: Callable[[], bool], playing: Callable[[], bool],
                 on_failure: Callable[[int, str], None]) -> None:
        self.front = front
        self.results: asyncio.Queue[FrontResult | None] = asyncio.Queue()
        self.last: FrontResult | None = None
        self._duplex = duplex
        self._loop = loop
        self._tick = tick
        self._in_reply = in_reply
        self._playing = playing
        self._on_failure = on_failure
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="edgevoice-frontend", daemon=True)
        # Results go out through a second thread, in order: a turn's end that waits for
        # its final pass (FinalPending) is resolved there, so this thread goes on hearing
        # while the recognizer decodes (under a CPU quota that took seconds, and the duplex
        # queue overflowed while the front end waited).
        front.listener.defer_final = True
        self._outbox: queue.SimpleQueue[FrontResult | None] = queue.SimpleQueue()
        self._deliverer = threading.Thread(target=self._deliver, name="edgevoice-frontend-out",
                                           daemon=True)

    def start(self) -> None:
        self._deliverer.start()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
        self._deliverer.join(timeout)

    def _post(self, item: FrontResult | None) -> None:
        self._outbox.put(item)

    def _deliver(self) -> None:
        """Hand results to the event loop in the order they were heard, each pending final
        replaced by what its decode gave (waited for here, not on the front end's thread)."""
        while True:
            item = self._outbox.get()
            if item is not None and any(isinstance(e, FinalPending) for e in item.events):
                try:
                    events = [resolved for event in item.events for resolved in
                              (event.resolve() if isinstance(event, FinalPending) else (event,))]
                except Exception:  # as a failure in process(): the result is lost, and reported
                    with contextlib.suppress(RuntimeError):
                        self._loop.call_soon_threadsafe(self._on_failure, item.index, traceback.format_exc())
                    continue
                item = dataclasses.replace(item, events=tuple(events))
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens
                self._loop.call_soon_threadsafe(self.results.put_nowait, item)
            if item is None:
                return

    def _engaged(self) -> bool:
        """Whether a decision hangs on every period: someone is talking (the endpointer
        waits for the end) or the device is (barge-in)."""
        return self.front.listener.in_turn or self._playing()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                engaged = self._engaged()
                frames = self._duplex.take(0.5, at_least=1 if engaged else IDLE_BATCH_PERIODS)
                if frames is None:
                    break
                for frame in frames:
                    self._tick()
                    try:
                        result = self.front.process(frame, in_reply=self._in_reply(), idle=not engaged)
                    except Exception:
                        self._loop.call_soon_threadsafe(self._on_failure, frame.index, traceback.format_exc())
                        continue
                    self.last = result
                    if result.events or result.barge_in is not None:
                        self._post(result)
        finally:
            self._post(None)
