"""The whole device end to end: the simulated room, the real models (Silero VAD,
pocketsphinx in phrase-list mode, the bundled piper voice) and the example agent server
on loopback as the agent. Nothing is faked."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import numpy as np
import pytest
from gpiozero.pins.mock import MockFactory
from support.agent_server import example_server
from support.device_harness import WAKE_PHRASE, running_device, voice

from edgevoice.audio.frames import Pcm
from edgevoice.audio.io.wav import read_wav
from edgevoice.audio.speaking.heard import heard_part
from edgevoice.audio.speaking.playback import Speaker
from edgevoice.device.events import EventType
from edgevoice.device.system.sdnotify import Notifier


@pytest.mark.parametrize("shape", ["sse", "text", "json"])
async def test_a_turn_is_heard_sent_with_the_contract_fields_answered_and_spoken(
    tmp_path: Path, shape: str
) -> None:
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify.sock"))
    notify.settimeout(5)
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "notify.sock")})
    async with example_server(shape=shape) as server:
        overrides = [f"agent.url={server.url}/agent", "device.resource_id=kitchen"]
        async with running_device(tmp_path, overrides, notifier=notifier) as device:
            assert notify.recv(200).startswith(b"READY=1")
            device.say("my name is alice")
            heard = await device.wait_for(EventType.TRANSCRIPT_USER)
            assert heard.data["text"] == "my name is alice"
            done = await device.wait_for(EventType.REPLY_DONE)
            assert done.data["status"] == "completed"
            spoken = [e.data["text"] for e in device.of(EventType.TRANSCRIPT_AGENT)]
            assert " ".join(spoken) == "Nice to meet you, Alice."
            bodies = server.state.bodies()
            assert len(bodies) == 1
            assert set(bodies[0]) == {"session_id", "resource_id", "type", "text"}
            assert bodies[0]["text"] == "my name is alice"
            assert bodies[0]["type"] == "chat"
            assert bodies[0]["resource_id"] == "kitchen"
            assert bodies[0]["session_id"] == device.daemon.agent.session_id
            metrics = await device.wait_for(EventType.METRICS_TURN)
            assert metrics.data["status"] == "completed"
            assert metrics.data["stages_ms"]["voice_to_voice"] > 0
        assert notify.recv(200) == b"STOPPING=1"
    notify.close()
    # The reply really left the loudspeaker: the recorded speaker stream holds speech.
    speaker, _ = read_wav(tmp_path / "room" / "speaker.wav")
    assert np.abs(speaker).max() > 3000


def _spy_on(speaker: Speaker) -> list[tuple[str, Pcm, str, tuple[tuple[int, int], ...]]]:
    """Record every segment the speaker is given: (utterance, pcm, text, word ends)."""
    queued: list[tuple[str, Pcm, str, tuple[tuple[int, int], ...]]] = []
    enqueue = speaker.enqueue

    def spy(pcm: Pcm, *, utterance_id: str, text: str = "", kind: str = "speech",
            word_ends: tuple[tuple[int, int], ...] = ()) -> None:
        if kind == "speech":
            queued.append((utterance_id, pcm.copy(), text, word_ends))
        enqueue(pcm, utterance_id=utterance_id, text=text, kind=kind, word_ends=word_ends)

    speaker.enqueue = spy  # type: ignore[method-assign]
    return queued


def _played_prefix(recorded: Pcm, segments: list[tuple[Pcm, str, tuple[tuple[int, int], ...]]]) -> str:
    """What the recording of the loudspeaker says was heard: each segment is found in it
    sample for sample, and counts as played up to its first sample the recording lacks."""
    data = recorded.tobytes()
    parts, search = [], 0
    for pcm, text, word_ends in segments:
        head = pcm[:160].tobytes()
        at = data.find(head, search)
        while at >= 0 and at % 2:  # a sample boundary, not half of one
            at = data.find(head, at + 1)
        if at < 0:
            break  # never reached the loudspeaker
        start = at // 2
        window = recorded[start : start + len(pcm)]
        same = window == pcm[: len(window)]
        played = len(window) if same.all() else int(np.argmin(same))
        part = heard_part(text, len(pcm), played, word_ends)
        if part:
            parts.append(part)
        search = (start + played) * 2
        if played < len(pcm):
            break
    return " ".join(parts)


async def test_barge_in_cancels_the_request_stops_playback_and_is_remembered(tmp_path: Path) -> None:
    async with (
        example_server(shape="sse", word_delay_s=0.25) as server,
        running_device(tmp_path, [f"agent.url={server.url}/agent"]) as device,
    ):
        assert device.daemon.conversation is not None
        queued = _spy_on(device.daemon.conversation.replies.speaker)
        device.say("tell me a long story")
        await device.wait_for(EventType.TRANSCRIPT_USER, text="tell me a long story")
        await device.wait_for(EventType.REPLY_STARTED)
        said_at = device.say("what is my name", after_s=1.5)
        person = voice("what is my name")
        onset = said_at + int(np.argmax(np.abs(person) > 500)) / 16000  # the first audible sample
        barge = await device.wait_for(EventType.BARGE_IN)
        # The barge-in is the person (not the device's own echo): it comes after their onset
        # (and within a second and a half of their last word), and dates from that onset.
        last_word = said_at + len(person) / 16000
        assert onset < barge.data["detected_s"] < last_word + 1.5, (onset, last_word, barge.data)
        assert abs(barge.data["onset_s"] - onset) < 0.3, (onset, barge.data)
        done = await device.wait_for(EventType.REPLY_DONE)
        assert done.data["status"] == "interrupted"
        heard = done.data["heard_text"]
        assert heard and "Here is a long answer".startswith(heard[:20])
        disconnect = await server.state.wait_for_disconnect(within_s=5)
        assert disconnect["path"] == "/agent"
        # The person's words, from their onset, are the next turn...
        nxt = await device.wait_for(EventType.TRANSCRIPT_USER)
        assert nxt.data["text"] == "what is my name"
        await device.wait_for(EventType.REPLY_DONE, status="completed")
        # ...and the request carries what was actually heard of the interrupted reply.
        second = server.state.bodies()[1]
        assert second["interrupted_text"] == heard
        assert second["text"] == "what is my name"
        metrics = [e.data for e in device.of(EventType.METRICS_TURN) if e.data["status"] == "interrupted"]
        assert metrics and metrics[0]["stages_ms"]["interrupt_to_silence"] > 0
        stopped_at = barge.data["detected_s"]
        reply_id = done.data["utterance_id"]
    # Silence on the speaker from one period after the barge-in until the next reply.
    speaker, _ = read_wav(tmp_path / "room" / "speaker.wav")
    start = int((stopped_at + 0.02) * 16000)
    assert np.abs(speaker[start : start + 1600]).max() == 0
    # heard_text is exactly what the recording of the loudspeaker holds of the reply.
    segments = [(pcm, text, ends) for utterance, pcm, text, ends in queued if utterance == reply_id]
    assert segments
    assert heard == _played_prefix(speaker[:start], segments)


async def test_a_button_press_interrupts_like_a_barge_in(tmp_path: Path) -> None:
    factory = MockFactory()
    try:
        async with example_server(shape="text", word_delay_s=0.25) as server:
            overrides = [f"agent.url={server.url}/agent", "gpio.enabled=true", "gpio.button_pin=17"]
            async with running_device(tmp_path, overrides, pin_factory=factory) as device:
                device.say("tell me a long story")
                await device.wait_for(EventType.REPLY_STARTED)
                factory.pin(17).drive_low()
                factory.pin(17).drive_high()
                done = await device.wait_for(EventType.REPLY_DONE)
                assert done.data["status"] == "interrupted"
                await server.state.wait_for_disconnect(within_s=5)
                device.say("how many things have i said", after_s=0.5)
                await device.wait_for(EventType.REPLY_DONE, status="completed")
                second = server.state.bodies()[1]
                assert second["interrupted_text"] == done.data["heard_text"]
    finally:
        factory.reset()


async def test_reset_rotates_the_session_and_keeps_the_resource(tmp_path: Path) -> None:
    async with example_server(shape="json") as server:
        overrides = [f"agent.url={server.url}/agent", "device.resource_id=kitchen"]
        async with running_device(tmp_path, overrides) as device:
            device.say("hello there")
            await device.wait_for(EventType.REPLY_DONE)
            await device.daemon.control.reset_session()
            reset = await device.wait_for(EventType.SESSION_RESET)
            device.say("hello there", after_s=0.5)
            await device.wait_for(EventType.REPLY_DONE)
            first, second = server.state.bodies()
            assert first["session_id"] != second["session_id"] == reset.data["session_id"]
            assert first["resource_id"] == second["resource_id"] == "kitchen"


async def test_agent_down_speaks_the_failure_phrase_and_listens_again(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once the probe is closed
    overrides = [f"agent.url=http://127.0.0.1:{port}/agent", "agent.timeout_ms=3000"]
    async with running_device(tmp_path, overrides) as device:
        device.say("hello there")
        failed = await device.wait_for(EventType.REPLY_DONE)
        assert failed.data["status"] == "failed"
        error = await device.wait_for(EventType.ERROR)
        assert error.data["code"] == "agent_unreachable"
        phrase = await device.wait_for(EventType.TRANSCRIPT_AGENT)
        assert phrase.data["text"].startswith("Sorry")
        await device.wait_for(EventType.REPLY_DONE, status="completed")
        # Listening again: the next line is heard as a turn.
        device.say("hello there", after_s=0.5)
        again = await device.wait_for(EventType.TRANSCRIPT_USER)
        assert again.data["text"] == "hello there"
        await asyncio.sleep(0)


async def test_wake_word_opens_a_turn_and_the_follow_up_window_takes_the_next(tmp_path: Path) -> None:
    overrides_base = ["listen.mode=wakeword", "listen.wakeword=okay_nabu", "listen.follow_up_s=4"]
    async with example_server(shape="json") as server:
        overrides = [f"agent.url={server.url}/agent", *overrides_base]
        async with running_device(tmp_path, overrides) as device:
            device.say("what is my name")  # no wake word: not a turn
            device.say(WAKE_PHRASE, after_s=3.0)
            await device.wait_for(EventType.WAKE_WORD, name="okay_nabu")
            device.say("my name is alice", after_s=0.6)
            first = await device.wait_for(EventType.TRANSCRIPT_USER)
            assert first.data["text"] == "my name is alice"
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            # Within the follow-up window no wake word is needed.
            device.say("what is my name", after_s=0.5)
            second = await device.wait_for(EventType.TRANSCRIPT_USER)
            assert second.data["text"] == "what is my name"
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            assert [b["text"] for b in server.state.bodies()] == ["my name is alice", "what is my name"]


async def test_a_failing_frame_is_reported_and_the_device_keeps_listening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgevoice.audio.frames import DuplexFrame
    from edgevoice.device.runtime import daemon as daemon_module
    from edgevoice.device.runtime.frontend import FrontEnd, FrontResult

    class FlakyFrontEnd(FrontEnd):
        """The real front end, but frame 50 blows up as an engine bug would."""

        def process(self, frame: DuplexFrame, *, in_reply: bool = False, idle: bool = False) -> FrontResult:
            if frame.index == 50:
                raise RuntimeError("simulated engine failure")
            return super().process(frame, in_reply=in_reply, idle=idle)

    real_build = daemon_module.build_front_end

    def build(config: object) -> FrontEnd:
        front = real_build(config)  # type: ignore[arg-type]
        front.__class__ = FlakyFrontEnd
        return front

    monkeypatch.setattr(daemon_module, "build_front_end", build)
    async with (
        example_server(shape="json") as server,
        running_device(tmp_path, [f"agent.url={server.url}/agent"]) as device,
    ):
        error = await device.wait_for(EventType.ERROR, source="front_end")
        assert error.data["code"] == "frame_failed"
        device.say("hello there")
        heard = await device.wait_for(EventType.TRANSCRIPT_USER)
        assert heard.data["text"] == "hello there"
