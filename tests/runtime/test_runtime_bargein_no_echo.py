"""A device whose microphone does not hear its loudspeaker (a handset, a remote speaker):
the canceller has no echo to prove its reference on, and barge-in used to stay in its safe
mode for good, missing people. The whole daemon in the simulated room with no echo path.
(How many talk-overs it then takes is measured by bench/realtime_conversation.py, whose
microphone hears no loudspeaker either: docs/audio.md.)"""

from __future__ import annotations

from pathlib import Path

from support.device_harness import running_device

from edgevoice.device.events import EventType


async def test_without_an_echo_path_barge_in_leaves_the_safe_mode_while_the_device_talks(
        tmp_path: Path) -> None:
    async with running_device(tmp_path, ["llm.provider=local"], echo_gain_db=-120.0) as device:
        device.say("tell me a long story")
        await device.wait_for(EventType.REPLY_STARTED)
        await device.wait_for(EventType.BARGE_IN_MODE, mode="normal")
        modes = [e.data["mode"] for e in device.of(EventType.BARGE_IN_MODE)]
        assert modes == ["safe_threshold", "normal"]  # the first reply starts safe
        assert not device.of(EventType.REPLY_DONE)  # while the device talks, not after
