"""Speaking a streamed reply: splitter -> speakable -> TTS -> speaker, with events.

Usage (one reply is one task; barge-in cancels it)::

    speaking = ReplySpeaker(speaker, synthesizer, bus)
    task = asyncio.create_task(speaking.speak(agent_deltas, utterance_id="turn-7",
                                              on_started=..., on_outcome=...))
    outcome = await task   # status, text, heard_text, timings
    ...
    task.cancel()          # barge-in: TTS stops, speaker.drop(), reply.done interrupted;
                           # the interrupted outcome goes to on_outcome before CancelledError

:meth:`ReplySpeaker.speak` reads the agent's text deltas while the previous
sentence is synthesized: a sentence goes to TTS the moment the splitter is sure
it ended, each synthesized chunk is queued on the speaker at once (so the first
sentence plays while later ones are still arriving or being synthesized), and
the call returns when everything queued has been heard.

Events on the bus: ``reply.started`` (the first sample left the loudspeaker),
``transcript.agent`` (per sentence, when it starts playing), ``reply.done`` with
``status`` completed / interrupted (with ``heard_text``) / failed (with
``error`` and ``heard_text``). The speaker's callbacks run on the audio thread and
are handed to the loop with ``call_soon_threadsafe``.

Failure: when the agent's stream or TTS fails mid-reply, what was already queued
still plays, then ``reply.done`` says failed. Cancellation is never swallowed.

Held (a reply prepared before its turn has surely ended: device/runtime/speculation.py)::

    held = speaking.prepare(agent_deltas, utterance_id="turn-7")  # reads and synthesizes
    ...                                                          # ahead; plays nothing
    outcome = await speaking.speak(held, "turn-7", ...)  # released: plays at once, as above
    await held.discard()      # or: dropped; nothing was played, no event, no outcome
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.speaking.edges import ends_sentence, trim_edges
from edgevoice.audio.speaking.heard import heard_text
from edgevoice.audio.speaking.playback import SegmentProgress, Speaker
from edgevoice.audio.speaking.tts import Synthesizer, TtsAudio, shift_word_ends
from edgevoice.device.events import EventBus, EventType
from edgevoice.device.runtime.tasks import wait_event
from edgevoice.device.speaking.markdown import SpeakableSplitter
from edgevoice.device.system.memory import release_memory
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)


class ReplyStatus(StrEnum):
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ReplyTimings:
    """time.monotonic() stamps of one reply (None: did not happen)."""

    started: float
    first_delta: float | None = None
    first_sentence: float | None = None  # the splitter emitted the first sentence
    first_synthesis: float | None = None  # TTS began on it
    first_audio: float | None = None  # its first chunk was synthesized and queued
    first_played: float | None = None  # its first sample left the loudspeaker
    done: float | None = None
    # Per sentence: milliseconds from the splitter emitting it to TTS starting on it.
    sentence_to_synthesis_ms: tuple[float, ...] = ()

    def since_start_ms(self, stamp: float | None) -> float | None:
        return None if stamp is None else (stamp - self.started) * 1000.0

    def as_dict(self) -> dict[str, Any]:
        """Milliseconds since speak() was called, for metrics."""
        return {
            "first_delta_ms": self.since_start_ms(self.first_delta),
            "first_sentence_ms": self.since_start_ms(self.first_sentence),
            "first_synthesis_ms": self.since_start_ms(self.first_synthesis),
            "first_audio_ms": self.since_start_ms(self.first_audio),
            "first_played_ms": self.since_start_ms(self.first_played),
            "done_ms": self.since_start_ms(self.done),
        }


@dataclass(frozen=True, slots=True)
class ReplyOutcome:
    utterance_id: str
    status: ReplyStatus
    text: str  # every sentence that was queued for speaking (speakable form)
    heard_text: str  # what left the loudspeaker, cut at a word boundary
    timings: ReplyTimings
    error: dict[str, str] | None = None


@dataclass(slots=True)
class _Sentence:
    text: str
    index: int
    emitted: float
    synthesis: float | None = None


@dataclass(slots=True)
class _Reply:
    utterance_id: str
    started: float
    sentences: list[_Sentence] = field(default_factory=list)
    segments: list[tuple[_Sentence, bool]] = field(default_factory=list)  # (sentence, first chunk)
    segments_started: int = 0
    segments_finished: int = 0
    all_queued: bool = False
    played: asyncio.Event = field(default_factory=asyncio.Event)
    first_delta: float | None = None
    first_audio: float | None = None
    first_played: float | None = None
    on_started: Callable[[], None] | None = None
    on_outcome: Callable[[ReplyOutcome], None] | None = None
    # While held (prepared ahead): the audio made so far, queued on the speaker at release.
    held: list[tuple[Pcm, str, tuple[tuple[int, int], ...]]] | None = None
    released: float | None = None

    def timings(self, done: float | None) -> ReplyTimings:
        first = self.sentences[0] if self.sentences else None
        return ReplyTimings(
            started=self.started,
            first_delta=self.first_delta,
            first_sentence=first.emitted if first else None,
            first_synthesis=first.synthesis if first else None,
            first_audio=self.first_audio,
            first_played=self.first_played,
            done=done,
            sentence_to_synthesis_ms=tuple(
                (s.synthesis - s.emitted) * 1000.0 for s in self.sentences if s.synthesis is not None
            ),
        )


_END = object()


class HeldReply(AsyncIterable[str]):
    """A reply read and synthesized ahead by :meth:`ReplySpeaker.prepare`, playing nothing:
    :meth:`ReplySpeaker.speak` releases it (it plays at once), :meth:`discard` drops it
    (nothing was played, no event, no outcome). Not itself iterated: speak() takes it in
    place of the deltas it was prepared from."""

    def __init__(self, reply: _Reply, reader: asyncio.Task[None], produce: asyncio.Task[None]) -> None:
        self._reply = reply
        self._reader = reader
        self._produce = produce
        self.taken = False
        # Called by speak() as it takes the reply, before any of it is queued.
        self.on_release: Callable[[], None] | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        raise TypeError("a held reply is spoken by ReplySpeaker.speak(), not iterated")

    @property
    def saw_text(self) -> bool:
        """Whether its source has given any text yet."""
        return self._reply.first_delta is not None

    @property
    def failed(self) -> bool:
        """Its source or TTS failed before it was released."""
        task = self._produce
        return task.done() and (task.cancelled() or task.exception() is not None)

    async def discard(self) -> None:
        """Stop reading and synthesizing; what was made is dropped unheard."""
        self._reply.held = []
        await _stop_task(self._produce)
        await _stop_task(self._reader)


class ReplyStreamError(EdgeVoiceError):
    code = "reply_failed"


class ReplySpeaker:
    """Speaks streamed replies through a :class:`Speaker` (see the module docstring).

    It chains itself onto the speaker's ``on_segment_started``/``on_segment_finished``
    callbacks (keeping any already set), so build it after other users set theirs.
    """

    def __init__(
        self,
        speaker: Speaker,
        synthesizer: Synthesizer,
        bus: EventBus,
        *,
        max_first_chars: int = 60,
        max_chars: int = 300,
        first_phrase_chars: int = 0,
        first_wait_ms: int = 0,
        first_cut_words: int = 4,
        follow_growth: float = 0.0,
        min_follow_chars: int = 40,
        cut_edge_ms: int | None = None,
        sentence_gap_ms: int = 0,
        poll_s: float = 0.05,
    ) -> None:
        self.speaker = speaker
        self.synthesizer = synthesizer
        self.bus = bus
        self.max_first_chars = max_first_chars
        self.max_chars = max_chars
        self.first_phrase_chars = first_phrase_chars
        self.first_wait_ms = first_wait_ms
        self.first_cut_words = first_cut_words
        self.follow_growth = follow_growth
        self.min_follow_chars = min_follow_chars
        self.cut_edge_ms = cut_edge_ms  # None: piper's edge silence is kept at cuts too
        self.sentence_gap_ms = sentence_gap_ms
        self.poll_s = poll_s
        self._active: dict[str, _Reply] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        previous_started = speaker.on_segment_started
        previous_finished = speaker.on_segment_finished

        def started(progress: SegmentProgress) -> None:
            if previous_started is not None:
                previous_started(progress)
            self._from_audio_thread(self._segment_started, progress)

        def finished(progress: SegmentProgress) -> None:
            if previous_finished is not None:
                previous_finished(progress)
            self._from_audio_thread(self._segment_finished, progress)

        speaker.on_segment_started = started
        speaker.on_segment_finished = finished

    async def speak(self, deltas: AsyncIterable[str], utterance_id: str, *,
                    on_started: Callable[[], None] | None = None,
                    on_outcome: Callable[[ReplyOutcome], None] | None = None) -> ReplyOutcome:
        """Speak the reply streamed by ``deltas`` (or release a :class:`HeldReply` made by
        :meth:`prepare` from them: what it made plays at once); return its outcome once it
        has all been heard.

        ``on_started`` is called (on the loop) when its first sample left the loudspeaker,
        right after ``reply.started``; ``on_outcome`` with the outcome however the reply
        ended. Cancelling the task stops TTS, drops the reply from the speaker, emits
        ``reply.done`` interrupted, hands that outcome to ``on_outcome`` and re-raises.
        """
        if isinstance(deltas, HeldReply):
            return await self._release(deltas, utterance_id, on_started, on_outcome)
        reply = self._begin(utterance_id, on_started, on_outcome)
        sentences: asyncio.Queue[object] = asyncio.Queue()
        reader = asyncio.create_task(self._read(deltas, sentences, reply), name=f"reply-read-{utterance_id}")

        async def cleanup() -> None:
            await _stop_task(reader)
            # Memory: shrink what a long chunk grew in the TTS engine, on its worker after
            # the reply (docs/runtime.md "Memory"); the next reply's first audio is not slower.
            self.synthesizer.release_memory(then=release_memory)

        # agent stream or TTS failed: what is queued still plays
        return await self._deliver(reply, self._synthesize(sentences, reply), cleanup,
                                   "the reply could not be spoken")

    def prepare(self, deltas: AsyncIterable[str], utterance_id: str) -> HeldReply:
        """Read and synthesize the reply ``deltas`` stream, ahead, into a held queue: nothing
        plays and no event is emitted until :meth:`speak` takes the returned reply. Tasks
        it starts copy the caller's context (a tool gate set there holds in them)."""
        self._loop = asyncio.get_running_loop()
        reply = _Reply(utterance_id, time.monotonic(), held=[])
        sentences: asyncio.Queue[object] = asyncio.Queue()
        reader = asyncio.create_task(self._read(deltas, sentences, reply), name=f"held-read-{utterance_id}")
        produce = asyncio.create_task(self._synthesize(sentences, reply), name=f"held-tts-{utterance_id}")
        return HeldReply(reply, reader, produce)

    async def _release(self, held: HeldReply, utterance_id: str, on_started: Callable[[], None] | None,
                       on_outcome: Callable[[ReplyOutcome], None] | None) -> ReplyOutcome:
        reply = held._reply
        if held.taken or reply.utterance_id != utterance_id or reply.held is None:
            raise ValueError(f"held reply {reply.utterance_id!r} cannot be spoken as {utterance_id!r}")
        if utterance_id in self._active:
            raise ValueError(f"utterance {utterance_id!r} is already being spoken")
        held.taken = True
        if held.on_release is not None:
            held.on_release()
        reply.on_started, reply.on_outcome = on_started, on_outcome
        self._active[utterance_id] = reply
        reply.released = time.monotonic()
        made, reply.held = reply.held, None
        for pcm, text, word_ends in made:
            self.speaker.enqueue(pcm, utterance_id=utterance_id, text=text, word_ends=word_ends)

        async def produced() -> None:
            await held._produce

        async def cleanup() -> None:
            await _stop_task(held._reader)
            self.synthesizer.release_memory(then=release_memory)

        return await self._deliver(reply, produced(), cleanup, "the reply could not be spoken")

    async def play(self, audio: AsyncIterable[TtsAudio], utterance_id: str, *,
                   on_started: Callable[[], None] | None = None,
                   on_outcome: Callable[[ReplyOutcome], None] | None = None) -> ReplyOutcome:
        """Play audio made elsewhere (Home Assistant's TTS, an announcement) as a reply:
        the same events, play cursor, callbacks and cancellation as :meth:`speak`. A chunk's
        text (where it has one) is its sentence."""
        reply = self._begin(utterance_id, on_started, on_outcome)

        async def queue_all() -> None:
            async for chunk in audio:
                now = time.monotonic()
                if reply.first_delta is None:
                    reply.first_delta = now
                sentence = _Sentence(chunk.text, len(reply.sentences), now, now)
                reply.sentences.append(sentence)
                self._queue(reply, sentence, chunk, None, bool(chunk.text))

        return await self._deliver(reply, queue_all(), None, "the audio could not be played")

    def _begin(self, utterance_id: str, on_started: Callable[[], None] | None,
               on_outcome: Callable[[ReplyOutcome], None] | None) -> _Reply:
        self._loop = asyncio.get_running_loop()
        if utterance_id in self._active:
            raise ValueError(f"utterance {utterance_id!r} is already being spoken")
        reply = _Reply(utterance_id, time.monotonic(), on_started=on_started, on_outcome=on_outcome)
        self._active[utterance_id] = reply
        return reply

    async def _deliver(self, reply: _Reply, produce: Coroutine[Any, Any, None],
                       cleanup: Callable[[], Awaitable[None]] | None, failed: str) -> ReplyOutcome:
        """Await ``produce`` (it queues the reply's audio), then until all of it was heard.
        A failing source still lets what is queued play (then ``failed``); cancelling drops
        the reply from the speaker, emits ``reply.done`` interrupted and re-raises."""
        error: BaseException | None = None
        try:
            try:
                await produce
            except asyncio.CancelledError:
                raise
            except Exception as err:
                error = err
                _LOGGER.warning("reply %s failed: %s", reply.utterance_id, err)
            reply.all_queued = True
            await self._wait_played(reply)
        except asyncio.CancelledError:
            self.speaker.drop(reply.utterance_id)
            self._finish(reply, ReplyStatus.INTERRUPTED, None)
            raise
        finally:
            if cleanup is not None:
                await cleanup()
            self._active.pop(reply.utterance_id, None)
        if error is not None:
            failure = error if isinstance(error, EdgeVoiceError) else ReplyStreamError(f"{failed}: {error}")
            return self._finish(reply, ReplyStatus.FAILED, failure.as_dict())
        return self._finish(reply, ReplyStatus.COMPLETED, None)

    # --- the pipeline --------------------------------------------------------------------------

    async def _read(self, deltas: AsyncIterable[str], out: asyncio.Queue[object], reply: _Reply) -> None:
        splitter = SpeakableSplitter(self.max_first_chars, self.max_chars, self.first_phrase_chars,
                                     first_wait_ms=self.first_wait_ms, first_cut_words=self.first_cut_words,
                                     follow_growth=self.follow_growth, min_follow_chars=self.min_follow_chars)

        def push(texts: list[str]) -> None:
            now = time.monotonic()
            for text in texts:
                sentence = _Sentence(text, len(reply.sentences), now)
                reply.sentences.append(sentence)
                out.put_nowait(sentence)

        wait_s = self.first_wait_ms / 1000.0
        iterator = aiter(deltas)
        following: asyncio.Future[str] | None = None
        waited = False  # the first piece's wait was offered to the splitter
        try:
            while True:
                if following is None:
                    following = asyncio.ensure_future(anext(iterator))
                timeout = None
                if wait_s and reply.first_delta is not None and not splitter.emitted and not waited:
                    timeout = max(0.0, reply.first_delta + wait_s - time.monotonic())
                done, _ = await asyncio.wait({following}, timeout=timeout)
                if not done:  # the first piece waited first_wait_ms with no natural cut
                    waited = True
                    push(splitter.waited((time.monotonic() - (reply.first_delta or 0.0)) * 1000.0))
                    continue
                try:
                    delta = following.result()
                except StopAsyncIteration:
                    break
                following = None
                if reply.first_delta is None:
                    reply.first_delta = time.monotonic()
                push(splitter.feed(delta))
                if waited and not splitter.emitted:  # no safe cut yet at the wait: try each delta
                    push(splitter.waited((time.monotonic() - reply.first_delta) * 1000.0))
            push(splitter.flush())
            out.put_nowait(_END)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            out.put_nowait(err)
        finally:
            if following is not None and not following.done():
                following.cancel()

    async def _synthesize(self, sentences: asyncio.Queue[object], reply: _Reply) -> None:
        gap = np.zeros(SAMPLE_RATE * self.sentence_gap_ms // 1000, dtype=np.int16)
        after_cut = False  # the previous piece ended inside a sentence
        while True:
            item = await sentences.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, _Sentence)
            sentence = item

            def mark(stamp: float, sentence: _Sentence = sentence) -> None:
                if sentence.synthesis is None:
                    sentence.synthesis = stamp

            first_chunk = True
            cut_after = not ends_sentence(sentence.text)
            async for chunk in self.synthesizer.stream(sentence.text, on_chunk_start=mark):
                audio = chunk
                if self.cut_edge_ms is not None:
                    last_chunk = sentence.text.rstrip().endswith(chunk.text.strip())
                    audio = _trimmed(chunk, head=first_chunk and after_cut, tail=last_chunk and cut_after,
                                     keep_ms=self.cut_edge_ms)
                self._queue(reply, sentence, audio,
                            gap if first_chunk and reply.segments and not after_cut else None, first_chunk)
                first_chunk = False
            after_cut = cut_after

    def _queue(
        self, reply: _Reply, sentence: _Sentence, audio: TtsAudio, gap: Pcm | None, first_chunk: bool
    ) -> None:
        if len(audio.pcm) == 0:
            return
        pcm, word_ends = audio.pcm, audio.word_ends
        if gap is not None and len(gap) > 0:
            pcm = np.concatenate([gap, pcm])
            word_ends = shift_word_ends(word_ends, len(gap))
        reply.segments.append((sentence, first_chunk))
        if reply.first_audio is None:
            reply.first_audio = time.monotonic()
        if reply.held is not None:  # prepared ahead: queued on the speaker when released
            reply.held.append((pcm, audio.text, word_ends))
            return
        self.speaker.enqueue(pcm, utterance_id=reply.utterance_id, text=audio.text, word_ends=word_ends)

    async def _wait_played(self, reply: _Reply) -> None:
        while True:
            if reply.segments_finished >= len(reply.segments):
                return
            if self.speaker.pending_samples(reply.utterance_id) == 0:
                return  # e.g. dropped by someone else: nothing more will play
            await wait_event(reply.played, self.poll_s)  # a cancel here is never lost
            reply.played.clear()

    def _finish(self, reply: _Reply, status: ReplyStatus, error: dict[str, str] | None) -> ReplyOutcome:
        heard = heard_text(self.speaker.progress(reply.utterance_id))
        spoken = " ".join(s.text for s in reply.sentences
                          if s.text and any(seg is s for seg, _ in reply.segments))
        outcome = ReplyOutcome(reply.utterance_id, status, spoken, heard,
                               reply.timings(time.monotonic()), error)
        data: dict[str, Any] = {"utterance_id": reply.utterance_id, "status": str(status)}
        if status is not ReplyStatus.COMPLETED:
            data["heard_text"] = heard
        if error is not None:
            data["error"] = error
        data["timings"] = outcome.timings.as_dict()
        self.bus.emit(EventType.REPLY_DONE, **data)
        if reply.on_outcome is not None:
            reply.on_outcome(outcome)
        return outcome

    # --- audio-thread callbacks, handed to the loop ----------------------------------------------

    def _from_audio_thread(self, handler: Callable[[SegmentProgress, float], None],
                           progress: SegmentProgress) -> None:
        loop = self._loop
        if loop is None or progress.kind != "speech" or progress.utterance_id not in self._active:
            return
        try:
            loop.call_soon_threadsafe(handler, progress, time.monotonic())
        except RuntimeError:  # the loop is closed
            pass

    def _segment_started(self, progress: SegmentProgress, stamp: float) -> None:
        reply = self._active.get(progress.utterance_id)
        if reply is None or reply.segments_started >= len(reply.segments):
            return
        sentence, first_chunk = reply.segments[reply.segments_started]
        reply.segments_started += 1
        if reply.first_played is None:
            reply.first_played = stamp
            # a held reply: from its release (when its turn was over), not from its preparation
            since = reply.released if reply.released is not None else reply.started
            self.bus.emit(EventType.REPLY_STARTED, utterance_id=reply.utterance_id,
                          latency_ms=round((stamp - since) * 1000.0, 1))
            if reply.on_started is not None:
                reply.on_started()
        if first_chunk:
            self.bus.emit(EventType.TRANSCRIPT_AGENT, utterance_id=reply.utterance_id,
                          text=sentence.text, index=sentence.index)

    def _segment_finished(self, progress: SegmentProgress, stamp: float) -> None:
        reply = self._active.get(progress.utterance_id)
        if reply is None:
            return
        reply.segments_finished += 1
        reply.played.set()


def _trimmed(audio: TtsAudio, *, head: bool, tail: bool, keep_ms: int) -> TtsAudio:
    """``audio`` with piper's edge silence cut down where it meets a cut (audio/speaking/edges.py)."""
    if not (head or tail):
        return audio
    pcm, word_ends = trim_edges(audio.pcm, audio.word_ends, head=head, tail=tail, keep_ms=keep_ms)
    return dataclasses.replace(audio, pcm=pcm, word_ends=word_ends)


async def _stop_task(task: asyncio.Task[None]) -> None:
    """Cancel a helper task and wait for it; our own cancellation still propagates."""
    if task.done():
        if not task.cancelled():
            task.exception()
        return
    task.cancel()
    await asyncio.wait([task])
