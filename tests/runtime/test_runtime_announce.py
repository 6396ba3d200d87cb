"""Announcements and remote turns on the real daemon over a real mosquitto with the
shipped ACL: an announcement waits for the turn in progress, an urgent one interrupts it,
``then_listen`` opens a turn without the wake word, ``listen`` does so on its own, a WAV
from a URL plays, and what cannot be done answers a clear code."""

from __future__ import annotations

import asyncio
import io
import wave
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np
from aiohttp import web
from support.agent_server import serve
from support.device_commands import Commands, device_overrides
from support.device_harness import running_device
from support.mosquitto import Broker
from support.mqtt_fakes import Observer

from edgevoice.device.events import EventType

WAKEWORD = ["listen.mode=wakeword", "listen.wakeword=okay_nabu", "listen.follow_up_s=0"]
# The simulated room runs 25-75 times faster than the wall clock: with the default 5 s a
# turn opened remotely gave up, unheard, ~0.1-0.2 s (wall) after it opened, now and then
# before the test's next MQTT round trip. A minute keeps such a turn open for the test's
# next step.
PATIENT = ["listen.wake_timeout_s=60"]


def tone_wav(seconds: float = 0.6, rate: int = 22050) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    pcm = (0.3 * 32767 * np.sin(2 * np.pi * 440 * t)).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(pcm.tobytes())
    return out.getvalue()


@asynccontextmanager
async def audio_server() -> AsyncIterator[str]:
    app = web.Application()

    async def chime(_: web.Request) -> web.Response:
        return web.Response(body=tone_wav(), content_type="audio/wav")

    async def text(_: web.Request) -> web.Response:
        return web.Response(text="not audio")

    app.router.add_get("/chime.wav", chime)
    app.router.add_get("/text.wav", text)
    async with serve(app) as url:
        yield url


async def test_announce_waits_for_the_turn_interrupts_when_urgent_and_then_listens(
    tmp_path: Path, broker: Broker
) -> None:
    observer = Observer(broker)
    command = Commands(observer, "dev1")
    try:
        async with running_device(tmp_path, [*device_overrides(broker, "dev1"), *WAKEWORD, *PATIENT]) \
                as device:
            await command.online()
            conversation = device.daemon.conversation
            assert conversation is not None

            # 1. A normal announcement while a reply is being spoken waits for it to end.
            story = await command("say", {"text": "Once upon a time a board sat on a shelf. It listened "
                                                  "to the kettle and the rain. It waited for a voice."})
            assert story["ok"]
            await device.wait_for(EventType.REPLY_STARTED)
            pending = asyncio.create_task(command("announce", {"text": "Dinner is ready."}, timeout_s=60))
            first_done = await device.wait_for(EventType.REPLY_DONE)
            assert first_done.data["status"] == "completed"  # the reply was not cut off
            answer = await pending
            assert answer["ok"], answer
            assert answer["result"]["played"] is True and answer["result"]["interrupted"] is None
            # It waited for the reply: the announcement was spoken after that reply ended. (How
            # long that took depends on the machine's speed, so the order is what is checked.)
            assert answer["result"]["waited_s"] > 0
            announced = next(i for i, e in enumerate(device.events) if e.type == EventType.TRANSCRIPT_AGENT
                             and e.data["text"] == "Dinner is ready.")
            assert device.events.index(first_done) < announced
            assert device.daemon.speaker is not None
            chimes = device.daemon.speaker.progress("earcon:announce")
            assert len(chimes) == 1 and chimes[0].played == chimes[0].total > 0  # the earcon came first

            # 2. An urgent one interrupts the reply in flight.
            assert (await command("say", {"text": "Here is another long message that goes on for a "
                                                  "while, sentence after sentence, so it can be cut."}))["ok"]
            await device.wait_for(EventType.REPLY_STARTED)
            urgent = await command("announce", {"text": "The door is open.", "priority": "urgent"},
                                   timeout_s=60)
            assert urgent["ok"] and urgent["result"]["interrupted"] in ("speaking", "thinking")
            statuses = [e.data["status"] for e in device.of(EventType.REPLY_DONE)]
            assert statuses[-2:] == ["interrupted", "completed"]

            # 3. then_listen: a question that opens a turn without the wake word.
            wakes = len(device.of(EventType.WAKE_WORD))
            asked = await command("announce", {"text": "Shall I turn the lights on?", "then_listen": True},
                                  timeout_s=60)
            assert asked["ok"] and asked["result"]["listening"] is True
            assert conversation.state == "listening"
            device.say("hello there", after_s=0.2)
            heard = await device.wait_for(EventType.TRANSCRIPT_USER)
            assert heard.data["text"] == "hello there"
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            assert len(device.of(EventType.WAKE_WORD)) == wakes  # no wake word was needed

            # 4. listen {} opens a turn remotely; not while one is in progress. Both are sent
            # back to back: the second meets the turn the first opened, whatever the room's
            # clock does while the answers travel.
            opened, busy = await asyncio.gather(command("listen"), command("listen"))
            assert opened["result"] == {"listening": True}, opened
            assert busy["ok"] is False and busy["error"]["code"] == "busy", busy
            assert conversation.state == "listening"
            device.say("hello there", after_s=0.2)
            assert (await device.wait_for(EventType.TRANSCRIPT_USER)).data["text"] == "hello there"
            await device.wait_for(EventType.REPLY_DONE, status="completed")
    finally:
        observer.close()


async def test_announce_plays_a_wav_from_a_url_and_refuses_what_it_cannot_play(
    tmp_path: Path, broker: Broker
) -> None:
    observer = Observer(broker)
    command = Commands(observer, "dev1")
    try:
        async with (
            audio_server() as url,
            running_device(tmp_path, device_overrides(broker, "dev1")) as device,
        ):
            await command.online()
            speaker = device.daemon.speaker
            assert speaker is not None
            played = await command("announce", {"url": f"{url}/chime.wav"}, timeout_s=60)
            assert played["ok"], played
            ids = [p.utterance_id for p in speaker.progress("announce-audio")]
            assert ids == ["announce-audio"]
            assert speaker.progress("announce-audio")[0].played == speaker.progress("announce-audio")[0].total
            for bad in (f"{url}/missing.wav", f"{url}/text.wav", "http://127.0.0.1:9/none.wav"):
                answer = await command("announce", {"url": bad}, timeout_s=60)
                assert answer["ok"] is False and answer["error"]["code"] == "announce_failed", answer
                assert "url" in answer["error"]["message"] or "WAV" in answer["error"]["message"]
            assert device.daemon.conversation is not None
            assert device.daemon.conversation.state == "idle"
    finally:
        observer.close()
