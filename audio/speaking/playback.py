"""The speaker: a queue of tagged PCM that the duplex loop plays, with a play cursor.

Producers (TTS, earcons) :meth:`Speaker.enqueue` segments of 16 kHz PCM, each
tagged with the utterance it belongs to and the text it speaks. The audio thread
takes exactly one period per iteration with :meth:`Speaker.next_period` (silence
when nothing is queued) and tells the speaker how much of what it wrote still
sits in the device buffer. From that the cursor knows, per segment, how many
samples have actually left the loudspeaker: the ground truth for "what the user
heard" after an interruption.

Thread safety: every public method may be called from any thread. Callbacks
(``on_segment_started``/``on_segment_finished``) run on the audio thread; hand
them to the event loop with ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from edgevoice.audio.frames import Pcm


@dataclass(slots=True)
class Segment:
    """One queued piece of sound: usually one sentence of a reply."""

    utterance_id: str
    text: str
    pcm: Pcm
    kind: str = "speech"  # "speech" or "earcon"
    # Filled in as it plays, on the speaker's write timeline (samples since start).
    start: int | None = None  # timeline position of its first written sample
    written: int = 0  # samples of it written so far
    dropped: bool = False
    # Optional word timing: (end char offset in text, end sample in pcm) per word.
    word_ends: tuple[tuple[int, int], ...] = ()
    queued: int = 0  # samples originally queued (drop() truncates pcm to what was written)
    started_notified: bool = False
    finished_notified: bool = False

    @property
    def total(self) -> int:
        return len(self.pcm)


@dataclass(frozen=True, slots=True)
class SegmentProgress:
    """How much of one segment the person heard."""

    utterance_id: str
    text: str
    total: int
    played: int
    kind: str
    word_ends: tuple[tuple[int, int], ...] = field(default=())
    dropped: bool = False  # cut short by drop(): ``total`` is then what was written
    queued: int = 0  # samples originally queued (``total`` unless dropped)

    @property
    def complete(self) -> bool:
        """Played to its natural end (a dropped segment never is, unless nothing was cut)."""
        return self.played >= max(self.total, self.queued)


SegmentCallback = Callable[[SegmentProgress], None]


class Speaker:
    """Queue of tagged 16 kHz PCM with a play cursor (see the module docstring)."""

    def __init__(self, period_samples: int, volume: float = 1.0, history: int = 256) -> None:
        self.period_samples = period_samples
        self._volume = float(volume)
        self._lock = threading.Lock()
        self._queue: deque[Segment] = deque()
        self._history: deque[Segment] = deque(maxlen=history)
        self._sounding: deque[Segment] = deque()  # begun, not yet heard to the end
        self._offset = 0  # samples of the head segment already written
        self._timeline = 0  # samples written in total (speech and silence)
        self._latency = 0  # samples of the timeline still in the device buffer
        # The period next_period returns while nothing is queued or sounding: one
        # read-only array, so the idle audio thread allocates and fills nothing.
        self._silence = np.zeros(period_samples, dtype=np.int16)
        self._silence.flags.writeable = False
        self.on_segment_started: SegmentCallback | None = None
        self.on_segment_finished: SegmentCallback | None = None
        # Set by the duplex loop when its backend queues periods ahead of the device
        # (audio/io/rtloop.py): discards what is queued there and not yet played, returning
        # the samples discarded. Called on drop() and when sound is queued into silence,
        # so neither waits behind the queue.
        self.discard_queued: Callable[[], int] | None = None

    # --- producers ----------------------------------------------------------------------

    def enqueue(
        self,
        pcm: Pcm,
        *,
        utterance_id: str,
        text: str = "",
        kind: str = "speech",
        word_ends: tuple[tuple[int, int], ...] = (),
    ) -> None:
        """Queue ``pcm`` (16 kHz mono int16) to play after everything already queued."""
        if pcm.dtype != np.int16 or pcm.ndim != 1:
            raise ValueError("speaker takes 1-D int16 PCM at 16 kHz")
        segment = Segment(utterance_id, text, pcm.copy(), kind, word_ends=word_ends, queued=len(pcm))
        with self._lock:
            idle = not self._queue and not self._sounding
            self._queue.append(segment)
            self._history.append(segment)
            if idle and self.discard_queued is not None:
                self._rewind(self.discard_queued())  # only silence was queued ahead

    def drop(self, utterance_id: str | None = None) -> int:
        """Drop what is queued (all of it, or one utterance's). The next period the
        audio thread takes is silence (or the next utterance). Returns samples dropped."""
        with self._lock:
            dropped = 0
            kept: deque[Segment] = deque()
            for index, segment in enumerate(self._queue):
                if utterance_id is None or segment.utterance_id == utterance_id:
                    already = self._offset if index == 0 else 0
                    dropped += segment.total - already
                    segment.dropped = True
                    # Truncate to what was written so the cursor stops where sound stopped.
                    segment.pcm = segment.pcm[: segment.written]
                    if index == 0:
                        self._offset = 0
                else:
                    kept.append(segment)
            self._queue = kept
            if self.discard_queued is not None:
                # Written to their end but partly still queued in the backend, which is
                # about to discard that part: dropped too.
                for segment in self._sounding:
                    if utterance_id is None or segment.utterance_id == utterance_id:
                        segment.dropped = True
                self._rewind(self.discard_queued())
            return dropped

    def _rewind(self, samples: int) -> None:
        """The last ``samples`` of the timeline were discarded before they reached the
        device (called holding the lock): take them back. Dropped segments end where
        sound really stopped; others play those samples again."""
        if samples <= 0:
            return
        end = max(0, self._timeline - samples)
        self._timeline = end
        self._latency = max(0, self._latency - samples)
        again: list[Segment] = []
        for segment in self._history:
            if segment.start is None or segment.start + segment.written <= end:
                continue
            kept = max(0, end - segment.start)
            segment.written = kept
            if segment.dropped:
                segment.pcm = segment.pcm[:kept]
            elif not any(queued is segment for queued in self._queue):
                again.append(segment)  # written to its end, discarded in part: play it again
            if kept == 0:
                segment.start = None
                segment.started_notified = False
        if again:
            self._queue.extendleft(reversed(again))
        if self._queue and self._queue[0].start is not None:
            self._offset = self._queue[0].written
        elif self._queue:
            self._offset = 0
        self._sounding = deque(s for s in self._sounding if s.start is not None)

    # --- the audio thread -----------------------------------------------------------------

    def next_period(self) -> Pcm:
        """One period of output: queued sound, then silence. Called by the audio thread.
        While nothing is queued or sounding it is always the same read-only array of
        zeros (:attr:`silence`), so callers can tell silence by identity."""
        with self._lock:
            if not self._queue and not self._sounding:
                self._timeline += self.period_samples
                self._latency += self.period_samples
                return self._silence
        out = np.zeros(self.period_samples, dtype=np.int16)
        filled = 0
        with self._lock:
            while filled < self.period_samples and self._queue:
                head = self._queue[0]
                if head.start is None:
                    head.start = self._timeline + filled
                    self._sounding.append(head)
                take = min(self.period_samples - filled, head.total - self._offset)
                out[filled : filled + take] = head.pcm[self._offset : self._offset + take]
                filled += take
                self._offset += take
                head.written = self._offset
                if self._offset >= head.total:
                    self._queue.popleft()
                    self._offset = 0
            self._timeline += self.period_samples
            # Until the audio thread says otherwise, the new period is still in the device.
            self._latency += self.period_samples
            volume = self._volume
        if volume != 1.0 and filled:
            out = (out.astype(np.float32) * volume).astype(np.int16)
        self._notify()
        return out

    def set_output_latency(self, samples: int) -> None:
        """Samples of what was written that are still in the device buffer."""
        with self._lock:
            self._latency = max(0, int(samples))
            if not self._sounding:
                return
        self._notify()

    # --- the cursor -------------------------------------------------------------------------

    @property
    def silence(self) -> Pcm:
        """The read-only silent period :meth:`next_period` returns while idle."""
        return self._silence

    @property
    def volume(self) -> float:
        return self._volume

    @volume.setter
    def volume(self, value: float) -> None:
        self._volume = min(1.0, max(0.0, float(value)))

    @property
    def played_position(self) -> int:
        """Samples of the timeline that have left the loudspeaker."""
        with self._lock:
            return max(0, self._timeline - self._latency)

    def _played_of(self, segment: Segment, position: int) -> int:
        if segment.start is None:
            return 0
        return int(min(segment.written, max(0, position - segment.start)))

    def _progress(self, segment: Segment, position: int) -> SegmentProgress:
        return SegmentProgress(
            segment.utterance_id,
            segment.text,
            segment.total,
            self._played_of(segment, position),
            segment.kind,
            segment.word_ends,
            segment.dropped,
            segment.queued,
        )

    def progress(self, utterance_id: str) -> list[SegmentProgress]:
        """Every segment of one utterance, in order, with how much of each was heard."""
        with self._lock:
            position = max(0, self._timeline - self._latency)
            return [
                self._progress(s, position)
                for s in self._history
                if s.utterance_id == utterance_id
            ]

    def pending_samples(self, utterance_id: str | None = None) -> int:
        """Samples queued or still in the device buffer (not yet heard)."""
        with self._lock:
            position = max(0, self._timeline - self._latency)
            queued = 0
            for index, segment in enumerate(self._queue):
                if utterance_id is None or segment.utterance_id == utterance_id:
                    queued += segment.total - (self._offset if index == 0 else 0)
            in_device = 0
            for segment in self._sounding:
                if utterance_id is None or segment.utterance_id == utterance_id:
                    in_device += segment.written - self._played_of(segment, position)
            return queued + in_device

    def is_playing(self, utterance_id: str | None = None) -> bool:
        return self.pending_samples(utterance_id) > 0

    def _notify(self) -> None:
        # Only segments that have begun and not yet been heard to the end are looked at:
        # this runs every period on the audio thread.
        fire: list[tuple[SegmentCallback, SegmentProgress]] = []
        started_cb, finished_cb = self.on_segment_started, self.on_segment_finished
        with self._lock:
            if not self._sounding:
                return
            position = max(0, self._timeline - self._latency)
            still: deque[Segment] = deque()
            for segment in self._sounding:
                played = self._played_of(segment, position)
                if not segment.started_notified and played > 0:
                    segment.started_notified = True
                    if started_cb is not None:
                        fire.append((started_cb, self._progress(segment, position)))
                if segment.written >= len(segment.pcm) and played >= segment.written:
                    if segment.started_notified:
                        segment.finished_notified = True
                        if finished_cb is not None:
                            fire.append((finished_cb, self._progress(segment, position)))
                    continue  # heard to the end (or nothing of it was ever written)
                still.append(segment)
            self._sounding = still
        for callback, progress in fire:
            callback(progress)
