"""A barge-in decided on audio from before the reply began is not a barge-in.

Under load the front-end thread runs seconds behind the audio clock. When the device
starts a reply meanwhile (an urgent announcement dropped the person's turn, say), the
thread still judges the person's earlier words, now as "during the reply". Seen in
tests/runtime/test_runtime_announce_broker.py under a loaded machine: the announcement
was cut by the very words it had dropped. The whole device here, with the front end's
decision handed to the conversation as the front-end thread hands it over."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from support.device_harness import running_device
from support.mqtt_fakes import await_until

from edgevoice.device.events import EventType
from edgevoice.device.runtime.bargein import BargeIn
from edgevoice.device.runtime.frontend import FrontResult


def decided(end_s: float, *, onset_s: float) -> FrontResult:
    """The front end's result for the frame ending at ``end_s`` in which the detector took
    a barge-in whose speech began at ``onset_s`` (audio clock)."""
    return FrontResult(index=0, end_s=end_s, events=(), windows=(), mic=np.zeros(160, np.int16),
                       far_end_active=True, barge_in=BargeIn(onset_s))


LONG = ("This is a long announcement that goes on for a while, so that there is time to "
        "talk over it. It has a second sentence as well, and then a third one after that.")


async def test_a_decision_on_audio_from_before_the_reply_is_ignored_and_a_later_one_taken(
        tmp_path: Path) -> None:
    async with running_device(tmp_path) as device:
        conversation = device.daemon.conversation
        assert conversation is not None
        assert await await_until(lambda: conversation.clock.now() > 3.0, 30)  # audio behind us
        before = conversation.clock.now() - 0.5  # the end of a frame heard before the reply
        await conversation.say(LONG)
        await device.wait_for(EventType.REPLY_STARTED)
        started = conversation.clock.now()
        assert started > before
        # The front end decided on a frame that ended before the reply began.
        await conversation._on_front(decided(before, onset_s=before - 0.2))
        await asyncio.sleep(0.2)
        assert device.of(EventType.BARGE_IN) == []
        assert str(conversation.state) == "speaking"
        # Someone talking over the reply now is taken, as always.
        now = conversation.clock.now()
        await conversation._on_front(decided(now, onset_s=now - 0.1))
        barge_in = await device.wait_for(EventType.BARGE_IN)
        assert barge_in.data["onset_s"] >= started - 0.2
        done = await device.wait_for(EventType.REPLY_DONE)
        assert done.data["status"] == "interrupted"

