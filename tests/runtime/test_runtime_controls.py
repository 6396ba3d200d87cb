""""Start over" and "stop" with every provider: the device handles them itself.

The pure recogniser, the idle-reset clock, and the whole device with the example HTTP
agent on loopback as the agent: the control words never reach it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.agent_server import example_server
from support.device_harness import PHRASES, running_device

from edgevoice.device.events import Event, EventType
from edgevoice.device.runtime.controls import Control, control_of
from edgevoice.device.runtime.idle import IdleReset


@pytest.mark.parametrize(("text", "control"), [
    ("start over", Control.START_OVER), ("Let's start over.", Control.START_OVER),
    ("okay start again please", Control.START_OVER), ("new conversation", Control.START_OVER),
    ("reset", Control.START_OVER), ("Stop!", Control.STOP), ("stop please", Control.STOP),
    ("goodbye", Control.STOP), ("that's all", Control.STOP), ("never mind", Control.STOP),
    ("ok stop talking", Control.STOP),
    # questions that merely contain the words go to the agent
    ("how do I reset my router", None), ("stop the music in the kitchen", None),
    ("when does the bus stop come", None), ("cancel the timer", None),
    ("can you start over the playlist", None), ("", None), ("what time is it", None),
])
def test_control_is_the_whole_utterance(text: str, control: Control | None) -> None:
    assert control_of(text) is control


def test_idle_time_does_not_run_while_the_device_speaks() -> None:
    idle = IdleReset(last_activity=0.0)
    idle.set_busy(True, 10.0)  # a reply starts at t=10 and lasts 400 s
    assert idle.idle_for(400.0) == 0.0 and not idle.due(400.0, 300.0)
    idle.set_busy(False, 410.0)  # the reply ended
    assert idle.idle_for(411.0) == pytest.approx(1.0)
    assert not idle.due(709.0, 300.0)
    idle.activity(600.0)  # the person spoke again
    assert not idle.due(899.0, 300.0)
    assert idle.due(900.0, 300.0)
    assert not idle.due(10_000.0, 0.0)  # 0 disables


def spoken_since(device: Any, event: Event) -> str:
    after = device.events[device.events.index(event):]
    return " ".join(e.data["text"] for e in after if e.type == EventType.TRANSCRIPT_AGENT)


async def test_start_over_and_stop_never_reach_an_http_agent(tmp_path: Path) -> None:
    grammar = "[" + ", ".join(f'"{p}"' for p in (*PHRASES, "start over", "stop")) + "]"
    async with (
        example_server(shape="sse") as server,
        running_device(tmp_path, [f"agent.url={server.url}/agent", f"asr.grammar={grammar}"]) as device,
    ):
        first_session = device.daemon.agent.session_id
        device.say("my name is alice")
        await device.wait_for(EventType.REPLY_DONE, status="completed")
        assert len(server.state.bodies()) == 1

        device.say("start over")
        await device.wait_for(EventType.TRANSCRIPT_USER, text="start over")
        reset = await device.wait_for(EventType.SESSION_RESET)
        assert reset.data["reason"] == "voice_start_over"
        await device.wait_for(EventType.REPLY_DONE, status="completed")
        assert spoken_since(device, reset) == "Okay, let's start over."
        assert len(server.state.bodies()) == 1  # the words were not sent as a question
        second_session = device.daemon.agent.session_id
        assert second_session != first_session

        device.say("what is my name")
        await device.wait_for(EventType.REPLY_DONE, status="completed")
        bodies = server.state.bodies()
        assert len(bodies) == 2 and bodies[1]["session_id"] == second_session
        assert "interrupted_text" not in bodies[1]

        device.say("stop")
        await device.wait_for(EventType.TRANSCRIPT_USER, text="stop")
        reset = await device.wait_for(EventType.SESSION_RESET)
        assert reset.data["reason"] == "voice_stop"
        await device.wait_for(EventType.REPLY_DONE, status="completed")
        assert spoken_since(device, reset) == "Okay, goodbye."
        assert len(server.state.bodies()) == 2
        assert device.daemon.agent.session_id != second_session
