"""First words early through the real pipeline: a stalled, comma-less opener is spoken
after the wait (real bundled piper voice, real Speaker)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from support.speaking import PERIOD, PlaybackDriver, piper_engine

from edgevoice.audio.speaking.playback import Speaker
from edgevoice.audio.speaking.tts import Synthesizer
from edgevoice.device.assembly.speaking import apply_splitting
from edgevoice.device.config.schema import TtsConfig
from edgevoice.device.events import Event, EventBus
from edgevoice.device.speaking.reply import ReplySpeaker, ReplyStatus

OPENER = "I looked up the trains for tomorrow morning from the central station"
REST = " to the airport and there are three. The first leaves early."


def _replies(events: list[Event], wait_ms: int) -> tuple[Speaker, ReplySpeaker]:
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    bus.subscribe(events.append)
    speaker = Speaker(PERIOD)
    replies = ReplySpeaker(speaker, Synthesizer(piper_engine()), bus)
    apply_splitting(replies, TtsConfig(first_wait_ms=wait_ms, first_cut_words=4))
    return speaker, replies


async def _speak_stalled(wait_ms: int) -> tuple[list[Event], list[str], float, float | None]:
    """The agent sends the opener word by word, then stalls up to 4 s before the rest."""
    events: list[Event] = []
    speaker, replies = _replies(events, wait_ms)
    release = asyncio.Event()
    stalled_at: list[float] = []

    async def agent() -> AsyncIterator[str]:
        for word in OPENER.split(" "):
            yield word + " "
            await asyncio.sleep(0.005)
        stalled_at.append(time.monotonic())
        await release.wait()
        yield REST.lstrip()

    driver = PlaybackDriver(speaker)
    driver.start()
    task = asyncio.create_task(replies.speak(agent(), "u1"))
    started: float | None = None
    try:
        async with asyncio.timeout(4.0):
            while not any(e.type == "reply.started" for e in events):  # noqa: ASYNC110
                await asyncio.sleep(0.005)
            started = time.monotonic()
    except TimeoutError:
        pass
    finally:
        release.set()
        outcome = await asyncio.wait_for(task, 60)
        driver.stop()
    assert outcome.status is ReplyStatus.COMPLETED
    assert outcome.heard_text.split() == (OPENER + REST).split()
    texts = [e.data["text"] for e in events if e.type == "transcript.agent"]
    return events, texts, stalled_at[0], started


async def test_a_stalled_opener_starts_playing_after_the_wait() -> None:
    _, texts, stalled, started = await _speak_stalled(wait_ms=150)
    assert started is not None, "nothing played while the agent stalled"
    # 150 ms of wait plus piper's first piece (~0.3 s here alone, loaded; more in a full run)
    assert started - stalled < 3.0, started - stalled
    first = texts[0]
    assert OPENER.startswith(first) and len(first.split()) >= 4 and first != OPENER
    assert not first.endswith((" the", " from"))  # never cut right after a function word
    assert " ".join(texts).split() == (OPENER + REST).split()


async def test_without_the_wait_nothing_plays_until_the_agent_goes_on() -> None:
    _, texts, _, started = await _speak_stalled(wait_ms=0)
    assert started is None  # the control: the wait is what made the difference above
    assert texts[0].startswith(OPENER)
