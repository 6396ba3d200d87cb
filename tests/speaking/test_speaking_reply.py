"""The speaking pipeline with the real bundled piper voice and the real Speaker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import numpy as np
import pytest
from support.speaking import PERIOD, PlaybackDriver, piper_engine, stream_text

from edgevoice.audio.speaking.heard import heard_text
from edgevoice.audio.speaking.playback import Speaker
from edgevoice.audio.speaking.tts import Synthesizer
from edgevoice.device.events import Event, EventBus
from edgevoice.device.runtime.tasks import where_waiting
from edgevoice.device.speaking.reply import ReplyOutcome, ReplySpeaker, ReplyStatus

SENTENCES = [
    "The weather today is sunny and warm.",
    "Tomorrow brings light rain in the afternoon.",
    "Take an umbrella if you go out.",
]


def _setup(gap_ms: int = 0) -> tuple[Speaker, ReplySpeaker, list[Event]]:
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    events: list[Event] = []
    bus.subscribe(events.append)
    speaker = Speaker(PERIOD)
    replies = ReplySpeaker(speaker, Synthesizer(piper_engine()), bus, sentence_gap_ms=gap_ms)
    return speaker, replies, events


async def _until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(20):
        while not predicate():  # noqa: ASYNC110 - the state is set by the audio thread
            await asyncio.sleep(0.005)


async def test_first_sentence_plays_before_the_second_arrives() -> None:
    speaker, replies, events = _setup()
    second_sent = asyncio.Event()
    release = asyncio.Event()

    async def agent() -> AsyncIterator[str]:
        for word in SENTENCES[0].split(" "):
            yield word + " "
        await release.wait()  # the agent is still "thinking" about sentence two
        second_sent.set()
        yield SENTENCES[1]

    driver = PlaybackDriver(speaker)
    driver.start()
    task = asyncio.create_task(replies.speak(agent(), "u1"))
    try:
        await _until(lambda: any(e.type == "reply.started" for e in events))
        # Audio of sentence one was queued and has started playing: sentence two's text
        # has not even been produced yet.
        assert not second_sent.is_set()
        assert [p.text for p in speaker.progress("u1")] == [SENTENCES[0]]
        release.set()
        outcome = await asyncio.wait_for(task, 30)
    finally:
        driver.stop()
    assert outcome.status is ReplyStatus.COMPLETED
    assert outcome.heard_text == " ".join(SENTENCES[:2])
    types = [e.type for e in events]
    assert types == ["reply.started", "transcript.agent", "transcript.agent", "reply.done"]
    assert [e.data["text"] for e in events if e.type == "transcript.agent"] == SENTENCES[:2]
    t = outcome.timings
    assert t.first_sentence is not None and t.first_synthesis is not None and t.first_played is not None
    assert t.first_sentence <= t.first_synthesis <= t.first_played
    # The played stream holds both sentences' audio and nothing else.
    audio = driver.audio
    voiced = sum(p.total for p in speaker.progress("u1"))
    assert np.count_nonzero(audio) > 0.8 * voiced
    assert len(audio) >= voiced


async def test_cancel_mid_reply_stops_within_one_period_and_leaves_nothing() -> None:
    speaker, replies, events = _setup(gap_ms=50)
    driver = PlaybackDriver(speaker)
    driver.start()
    outcomes: list[ReplyOutcome] = []
    task = asyncio.create_task(replies.speak(stream_text([" ".join(SENTENCES)]), "u2",
                                             on_outcome=outcomes.append))
    try:
        # Let it play into the second sentence.
        await _until(lambda: len(speaker.progress("u2")) >= 2
                     and speaker.progress("u2")[1].played > speaker.progress("u2")[1].total // 2)
        driver.pause()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The very next period is silence: nothing of the reply is queued any more.
        assert not np.any(speaker.next_period())
        speaker.set_output_latency(0)
        assert speaker.pending_samples("u2") == 0
        # A chunk still synthesizing on the worker when cancelled is not queued later.
        await asyncio.sleep(0.6)
        assert speaker.pending_samples("u2") == 0
    finally:
        driver.stop()
    done = [e for e in events if e.type == "reply.done"]
    assert len(done) == 1 and done[0].data["status"] == "interrupted"
    heard = done[0].data["heard_text"]
    assert heard.startswith(SENTENCES[0] + " ")
    assert SENTENCES[1].startswith(heard[len(SENTENCES[0]) + 1 :])
    # the caller gets the interrupted outcome back, the same the event says
    assert [(o.status, o.heard_text) for o in outcomes] == [(ReplyStatus.INTERRUPTED, heard)]


async def test_heard_text_matches_recorded_audio_at_cut_points() -> None:
    engine = piper_engine()
    speaker, replies, _ = _setup()
    task = asyncio.create_task(replies.speak(stream_text([" ".join(SENTENCES)]), "u3"))
    await _until(lambda: len(speaker.progress("u3")) == len(SENTENCES))
    segments = speaker.progress("u3")
    lengths = [p.total for p in segments]
    bounds = np.cumsum(lengths)
    driver = PlaybackDriver(speaker)
    written = 0
    checks = 0
    total = int(bounds[-1])
    # Cut points inside sentences and just past the end of the first one.
    targets = sorted({int(total * f) // PERIOD * PERIOD for f in (0.15, 0.5, 0.72, 0.95)}
                     | {-(-int(bounds[0]) // PERIOD) * PERIOD})
    for target in targets:
        driver.step((target - written) // PERIOD)
        written = target
        recorded = driver.audio
        assert len(recorded) == written
        heard = heard_text(speaker.progress("u3"))
        complete = int(np.searchsorted(bounds, written, side="right"))
        whole = " ".join(SENTENCES[:complete])
        # Every fully written sentence is heard, and its audio is exactly what was recorded.
        assert heard.startswith(whole)
        start = int(bounds[complete - 1]) if complete else 0
        # The recording holds those sentences' audio back to back (speech, not silence).
        assert start <= written
        if complete:
            tail = recorded[start - PERIOD * 10 : start]
            assert np.count_nonzero(tail) > 0
        partial = heard[len(whole) :].strip()
        if complete < len(SENTENCES):
            sentence = SENTENCES[complete]
            assert sentence.startswith(partial)
            played_here = written - start
            if partial:
                # The heard words, spoken on their own, take about as long as what was played
                # of this sentence, and one more word would take clearly longer.
                alone = len(engine.synthesize(partial).pcm)
                assert alone < played_here + 0.35 * 16000, (partial, alone, played_here)
                assert partial != sentence
                checks += 1
            next_word = sentence[len(partial) :].split()[0]
            with_next = len(engine.synthesize(f"{partial} {next_word}".strip()).pcm)
            assert with_next > played_here - 0.35 * 16000, (partial, next_word, with_next, played_here)
    assert checks >= 2
    driver.step((int(bounds[-1]) - written) // PERIOD + 2)
    outcome = await asyncio.wait_for(task, 10)
    assert outcome.heard_text == " ".join(SENTENCES)


async def test_agent_failure_plays_what_was_queued_then_reports_failed() -> None:
    speaker, replies, events = _setup()

    async def agent() -> AsyncIterator[str]:
        yield SENTENCES[0] + " "
        yield "Half of a sec"
        raise ConnectionResetError("agent went away")

    driver = PlaybackDriver(speaker)
    driver.start()
    try:
        outcome = await asyncio.wait_for(replies.speak(agent(), "u4"), 30)
    finally:
        driver.stop()
    assert outcome.status is ReplyStatus.FAILED
    assert outcome.heard_text == SENTENCES[0]
    assert outcome.error is not None and outcome.error["code"] == "reply_failed"
    done = events[-1]
    assert done.type == "reply.done" and done.data["status"] == "failed"
    assert done.data["heard_text"] == SENTENCES[0]


async def test_a_cancel_that_meets_a_finished_sentence_still_stops_the_reply() -> None:
    """The barge-in's cancel can land in the very loop iteration in which the audio thread
    reports a sentence played. Python 3.11's ``asyncio.wait_for`` lost a cancel then (it
    returned the finished wait instead), the reply went on as if never cancelled, and the
    conversation, waiting for it under its lock, hung 5 s (bench/bargein_daemon.py saw it)."""
    speaker, replies, events = _setup(gap_ms=50)
    driver = PlaybackDriver(speaker)
    task = asyncio.create_task(replies.speak(stream_text([" ".join(SENTENCES)]), "u9"))
    # every sentence queued and none played: the reply waits for its audio to be heard
    await _until(lambda: "_wait_played" in where_waiting(task))
    first = speaker.progress("u9")[0]
    while speaker.progress("u9")[0].played < first.total:
        driver.step()  # on this thread: the "played" report is queued on the loop, not run yet
    asyncio.get_running_loop().call_soon(task.cancel)  # runs right after that report
    try:
        # asyncio.wait, not pytest.raises(CancelledError) under a timeout: the timeout's own
        # cancel of this test would pass for the reply's
        await asyncio.wait({task}, timeout=3)
        assert task.cancelled()
    finally:
        task.cancel()
        driver.stop()
    done = [e for e in events if e.type == "reply.done"]
    assert [e.data["status"] for e in done] == ["interrupted"]
    assert speaker.pending_samples("u9") == 0
