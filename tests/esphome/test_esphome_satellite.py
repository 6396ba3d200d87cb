"""The daemon in the simulated room as Home Assistant's Assist satellite, over the real
aioesphomeapi client: a whole turn, barge-in over HA's TTS, an announcement that starts a
conversation, a timer stopped by voice, volume and mute from the client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from aioesphomeapi import MediaPlayerCommand, VoiceAssistantTimerEventType
from support.device_harness import PHRASES, WAKE_PHRASE, running_device, voice
from support.ha_satellite import home_assistant
from support.ports import free_port

from edgevoice.device.esphome.entities import KEYS, MEDIA_PLAYER, MIC_MUTE
from edgevoice.device.events import EventType

GRAMMAR = "[" + ", ".join(f'"{p}"' for p in (*PHRASES, "stop")) + "]"
LONG_REPLY = ("once upon a time there was a little robot who lived in a quiet house by the sea, "
              "and every single morning it listened to the waves and counted the boats going by")


def satellite(port: int) -> list[str]:
    return ["listen.mode=wakeword", "listen.wakeword=okay_nabu", "esphome.enabled=true",
            "esphome.host=127.0.0.1", f"esphome.port={port}", "esphome.zeroconf=false",
            f"asr.grammar={GRAMMAR}", "conversation.failure_phrase="]


def level(samples: np.ndarray) -> float:
    return float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) if len(samples) else 0.0


async def test_a_whole_turn_goes_to_home_assistant_and_its_tts_plays(tmp_path: Path) -> None:
    port = free_port()
    async with running_device(tmp_path, satellite(port)) as device, home_assistant(port) as ha:
        ha.subscribe()
        await device.wait_for(EventType.ESPHOME_CLIENT, status="subscribed")
        device.say(WAKE_PHRASE)
        await device.wait_for(EventType.WAKE_WORD, name="okay_nabu")
        run = await ha.next_run()
        assert run.wake_word == "Okay Nabu"  # the phrase, as ESPHome firmware sends it
        device.say("what is my name", after_s=0.4)
        await asyncio.wait_for(run.ended.wait(), 60)
        assert not run.aborted  # the device ended its audio; HA goes on to STT
        heard = run.samples()
        # The person's words reached HA: well above the room's noise (-75 dBFS).
        assert len(heard) > 16000 * 0.8 and level(heard) > 100
        reply = voice("my name is alice")
        await ha.answer("what is my name", "Your name is Alice.", reply)
        started = await device.wait_for(EventType.REPLY_STARTED)
        done = await device.wait_for(EventType.REPLY_DONE, utterance_id=started.data["utterance_id"])
        assert done.data["status"] == "completed"
        assert await asyncio.wait_for(ha.finished.get(), 10) is True
        events = [e.data["event"] for e in device.of(EventType.PIPELINE_EVENT)]
        assert events[:3] == ["run-start", "stt-start", "stt-vad-start"] and "tts-stream-end" in events
        agent = [e.data["text"] for e in device.of(EventType.TRANSCRIPT_AGENT)]
        assert agent == ["Your name is Alice."]
    # HA's audio went out of the loudspeaker: the room's speaker recording carries it.
    from edgevoice.audio.io.wav import read_wav

    speaker, _ = read_wav(tmp_path / "room" / "speaker.wav")
    assert np.abs(speaker).max() > 3000


async def test_home_assistants_replies_play_to_the_end_and_only_the_wake_word_starts_a_run(
        tmp_path: Path) -> None:
    """The device never interrupts itself: HA's first reply (the canceller not converged
    yet) and paced replies after it play to the end in a room where nobody talks over
    them. Between them, words without the wake word start nothing: HA decides whether a
    conversation goes on (continue_conversation), not the device's own follow-up window."""
    port = free_port()
    async with running_device(tmp_path, satellite(port)) as device, home_assistant(port) as ha:
        ha.subscribe()
        await device.wait_for(EventType.ESPHOME_CLIENT, status="subscribed")
        reply = (np.concatenate([voice(LONG_REPLY)] * 2) * 0.5).astype(np.int16)
        for paced in (False, True, True):
            device.say(WAKE_PHRASE, after_s=0.5)
            run = await ha.next_run()
            device.say("tell me a long story", after_s=0.4)
            await asyncio.wait_for(run.ended.wait(), 60)
            await ha.answer("tell me a long story", LONG_REPLY, reply,
                            room=device.room if paced else None)
            done = await device.wait_for(EventType.REPLY_DONE, timeout_s=120)
            assert done.data["status"] == "completed", f"paced={paced}: {done.data}"
            assert not device.of(EventType.BARGE_IN)
            assert await asyncio.wait_for(ha.finished.get(), 10) is True
            # at once after the reply, inside what would be the device's own follow-up window
            turns = len(device.of(EventType.TRANSCRIPT_USER))
            device.say("what is my name", after_s=0.2)
            heard_by = device.room.now_s + 4.0
            while device.room.now_s < heard_by:  # noqa: ASYNC110 (the room's clock)
                await asyncio.sleep(0.01)
            assert ha.runs.empty(), "words without the wake word started a pipeline run"
            assert len(device.of(EventType.TRANSCRIPT_USER)) == turns


async def test_talking_over_home_assistants_reply_stops_it_and_starts_the_next_turn(tmp_path: Path) -> None:
    port = free_port()
    async with running_device(tmp_path, satellite(port)) as device, home_assistant(port) as ha:
        ha.subscribe()
        await device.wait_for(EventType.ESPHOME_CLIENT, status="subscribed")
        # A first reply, heard to the end: the echo canceller has heard the loudspeaker
        # (a device's very first reply is the one the canceller has not converged on).
        device.say(WAKE_PHRASE)
        run = await ha.next_run()
        device.say("hello there", after_s=0.4)
        await asyncio.wait_for(run.ended.wait(), 60)
        await ha.answer("hello there", LONG_REPLY, voice(LONG_REPLY))
        await device.wait_for(EventType.REPLY_DONE, status="completed")
        assert await asyncio.wait_for(ha.finished.get(), 10) is True
        device.say(WAKE_PHRASE, after_s=0.5)
        run = await ha.next_run()
        device.say("tell me a long story", after_s=0.4)
        await asyncio.wait_for(run.ended.wait(), 60)
        # HA's pacing on the room's clock (~25 s of reply in audio time, however far the
        # virtual room runs ahead of the test's wall clock); the person talks into it. This
        # checks what follows a barge-in, not its timing: with paced replies the device was
        # seen to interrupt itself ~1 s in, before the person spoke (docs/homeassistant.md).
        reply = (np.concatenate([voice(LONG_REPLY)] * 3) * 0.5).astype(np.int16)
        answer = asyncio.create_task(ha.answer("tell me a long story", LONG_REPLY, reply, room=device.room))
        await device.wait_for(EventType.REPLY_STARTED)
        device.say("what is my name", after_s=1.0)
        await device.wait_for(EventType.BARGE_IN)
        done = await device.wait_for(EventType.REPLY_DONE)
        assert done.data["status"] == "interrupted"
        # HA hears that playback ended, and the interrupting words are the next run.
        assert await asyncio.wait_for(ha.finished.get(), 10) is False
        second = await ha.next_run()
        assert second.conversation_id == "conv-1"  # HA keeps the conversation's context
        await asyncio.wait_for(second.ended.wait(), 60)
        assert level(second.samples()) > 100
        answer.cancel()  # HA stops streaming the old reply when a new run starts


async def test_an_announcement_that_starts_a_conversation_plays_then_listens(tmp_path: Path) -> None:
    from aiohttp import web
    from support.agent_server import serve

    from edgevoice.audio.io.wav import write_wav

    chime = tmp_path / "announce.wav"
    write_wav(chime, voice("hello there"), 16000)
    async def send_chime(_: web.Request) -> web.FileResponse:
        return web.FileResponse(chime)

    app = web.Application()
    app.router.add_get("/announce.wav", send_chime)
    port = free_port()
    async with (serve(app) as base, running_device(tmp_path, satellite(port)) as device,
                home_assistant(port) as ha):
        ha.subscribe()
        await device.wait_for(EventType.ESPHOME_CLIENT, status="subscribed")
        finished = await ha.client.send_voice_assistant_announcement_await_response(
            f"{base}/announce.wav", 60, "Hello there", start_conversation=True)
        assert finished.success
        done = [e for e in device.of(EventType.REPLY_DONE) if e.data["utterance_id"].startswith("announce")]
        assert done and done[0].data["status"] == "completed"
        run = await ha.next_run(timeout_s=30)  # listening after, without the wake word
        assert run.wake_word is None
        device.say("what is my name", after_s=0.3)
        await asyncio.wait_for(run.ended.wait(), 60)
        assert level(run.samples()) > 100


async def test_a_finished_timer_rings_until_stop_is_said(tmp_path: Path) -> None:
    port = free_port()
    async with running_device(tmp_path, satellite(port)) as device, home_assistant(port) as ha:
        ha.subscribe()
        await device.wait_for(EventType.ESPHOME_CLIENT, status="subscribed")
        T = VoiceAssistantTimerEventType
        ha.client.send_voice_assistant_timer_event(T.VOICE_ASSISTANT_TIMER_STARTED, "t1", "tea", 60, 60, True)
        await device.wait_for(EventType.TIMER, event="started")
        ha.client.send_voice_assistant_timer_event(T.VOICE_ASSISTANT_TIMER_FINISHED, "t1", "tea", 60, 0,
                                                   False)
        await device.wait_for(EventType.TIMER, event="finished")
        await asyncio.sleep(0.5)
        speaker = device.daemon.speaker
        assert speaker is not None and speaker.progress("timer-ring")  # it rang
        device.say("stop", after_s=0.3)  # no wake word while it rings
        stopped = await device.wait_for(EventType.TIMER, event="stopped")
        assert stopped.data["reason"] == "voice"
        rang = len(speaker.progress("timer-ring"))
        await asyncio.sleep(0.5)
        assert not speaker.is_playing("timer-ring") and len(speaker.progress("timer-ring")) == rang
        assert ha.runs.empty()  # "stop" was the device's own, not a pipeline run


async def test_volume_and_mute_from_the_client(tmp_path: Path) -> None:
    port = free_port()
    async with running_device(tmp_path, satellite(port)) as device, home_assistant(port) as ha:
        states: asyncio.Queue[object] = asyncio.Queue()
        ha.client.subscribe_states(states.put_nowait)
        ha.client.media_player_command(KEYS[MEDIA_PLAYER], volume=0.3)
        await device.wait_for(EventType.VOLUME_CHANGED)
        assert device.daemon.speaker is not None and abs(device.daemon.speaker.volume - 0.3) < 1e-6
        ha.client.switch_command(KEYS[MIC_MUTE], True)
        await device.wait_for(EventType.MIC_MUTED, muted=True)
        assert device.daemon.conversation is not None and device.daemon.conversation.muted
        ha.client.media_player_command(KEYS[MEDIA_PLAYER], command=MediaPlayerCommand.MUTE)
        seen: dict[int, object] = {}
        deadline = asyncio.get_running_loop().time() + 10
        while asyncio.get_running_loop().time() < deadline:
            state = await asyncio.wait_for(states.get(), 10)
            seen[state.key] = state  # type: ignore[attr-defined]
            player = seen.get(KEYS[MEDIA_PLAYER])
            switch = seen.get(KEYS[MIC_MUTE])
            if player is not None and switch is not None and player.muted and switch.state:  # type: ignore[attr-defined]
                break
        player, switch = seen[KEYS[MEDIA_PLAYER]], seen[KEYS[MIC_MUTE]]
        assert player.muted and abs(player.volume - 0.3) < 1e-3 and switch.state  # type: ignore[attr-defined]
        assert device.daemon.speaker.volume == 0.0  # muted speaker
    # The volume HA set survives a restart (the speaker's mute does not touch it).
    assert "volume = 0.3" in (tmp_path / "config.toml").read_text()
    async with running_device(tmp_path, satellite(free_port())) as again:
        assert again.daemon.speaker is not None and abs(again.daemon.speaker.volume - 0.3) < 1e-6
