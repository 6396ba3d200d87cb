"""Announcements play one at a time, in the order they came, and each one's ``waited_s``
is all the time it waited before it played: the queue behind an earlier announcement too."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from support.device_harness import running_device

from edgevoice.device.events import EventType
from edgevoice.device.runtime.announce import Announcement


async def test_a_second_announcement_waits_for_the_first_and_says_how_long(tmp_path: Path) -> None:
    async with running_device(tmp_path) as device:
        announcer = device.daemon.announcer
        sent = time.time()  # events are stamped with Unix time
        first_task = asyncio.create_task(announcer.announce(Announcement(
            text="The first announcement is a long one, and it takes a while to say all of it.")))
        await asyncio.sleep(0)  # the first one takes the queue
        second = await announcer.announce(Announcement(text="The second one."))
        first = await first_task
        first_took = first["waited_s"]  # nothing before it: it played at once
        assert first_took < 0.5
        spoken = [e.data["text"] for e in device.of(EventType.TRANSCRIPT_AGENT)]
        assert spoken.index("The second one.") > 0  # after the first one's sentences
        # It waited while the whole first announcement played (the room runs faster than
        # the wall clock, so the first one's play time is measured, not assumed).
        first_done = next(e for e in device.of(EventType.REPLY_DONE))
        assert first_done.ts - sent > 0
        assert second["waited_s"] >= first_done.ts - sent - 0.05, (second, first_done.ts - sent)
        assert second["played"] is True and second["waited_for"] is None
