"""A reply prepared ahead and held (ReplySpeaker.prepare): synthesized into its own queue,
nothing played and nothing published until speak() releases it; discarded, it leaves
nothing. The real bundled piper voice and the real Speaker, played by a driver thread."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import numpy as np
from support.speaking import PERIOD, PlaybackDriver, piper_engine

from edgevoice.audio.speaking.playback import Speaker
from edgevoice.audio.speaking.tts import Synthesizer
from edgevoice.device.events import Event, EventBus
from edgevoice.device.speaking.reply import ReplyOutcome, ReplySpeaker, ReplyStatus

FIRST = "The first train leaves at seven."
SECOND = "After that there is one every twenty minutes."


def _setup() -> tuple[Speaker, ReplySpeaker, list[Event]]:
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    events: list[Event] = []
    bus.subscribe(events.append)
    speaker = Speaker(PERIOD)
    return speaker, ReplySpeaker(speaker, Synthesizer(piper_engine()), bus), events


async def _until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(20):
        while not predicate():  # noqa: ASYNC110 - set by the synthesis task
            await asyncio.sleep(0.005)


async def test_a_held_reply_plays_nothing_until_released_then_at_once() -> None:
    speaker, replies, events = _setup()
    more = asyncio.Event()

    async def agent() -> AsyncIterator[str]:
        yield FIRST + " "
        await more.wait()
        yield SECOND

    driver = PlaybackDriver(speaker)
    driver.start()
    try:
        held = replies.prepare(agent(), "u1")
        reply = held._reply
        await _until(lambda: bool(reply.held))  # the first sentence's audio is made...
        await asyncio.sleep(0.2)
        assert speaker.pending_samples() == 0 and not np.any(driver.audio)  # ...and held back
        assert events == [] and held.saw_text and not held.failed
        released: list[int] = []
        held.on_release = lambda: released.append(speaker.pending_samples())
        task = asyncio.create_task(replies.speak(held, "u1"))
        await _until(lambda: any(e.type == "reply.started" for e in events))
        assert released == [0]  # told before anything was queued
        more.set()
        outcome = await asyncio.wait_for(task, 30)
    finally:
        driver.stop()
    assert outcome.status is ReplyStatus.COMPLETED
    assert outcome.heard_text == f"{FIRST} {SECOND}"
    assert [e.type for e in events] == ["reply.started", "transcript.agent", "transcript.agent", "reply.done"]
    # reply.started counts from the release, not from the preparation
    started = next(e for e in events if e.type == "reply.started")
    t = outcome.timings
    assert t.first_played is not None and t.first_audio is not None
    assert started.data["latency_ms"] < (t.first_played - t.started) * 1000.0


async def test_a_discarded_held_reply_stops_its_source_and_leaves_nothing() -> None:
    speaker, replies, events = _setup()
    closed = asyncio.Event()

    async def agent() -> AsyncIterator[str]:
        try:
            yield FIRST + " "
            await asyncio.sleep(30)  # the agent is still streaming
            yield SECOND
        finally:
            closed.set()

    driver = PlaybackDriver(speaker)
    driver.start()
    outcomes: list[ReplyOutcome] = []
    try:
        held = replies.prepare(agent(), "u2")
        await _until(lambda: bool(held._reply.held))
        await held.discard()
        await asyncio.wait_for(closed.wait(), 2)  # the request was closed, not left running
        await asyncio.sleep(0.2)
        # the same utterance id is free for the turn's own reply
        outcome = await asyncio.wait_for(replies.speak(_one(SECOND), "u2", on_outcome=outcomes.append), 30)
    finally:
        driver.stop()
    assert outcome.heard_text == SECOND  # nothing of the discarded one was played
    assert [p.text for p in speaker.progress("u2")] == [SECOND]
    assert [e.type for e in events] == ["reply.started", "transcript.agent", "reply.done"]
    assert [o.text for o in outcomes] == [SECOND]


async def _one(text: str) -> AsyncIterator[str]:
    yield text
