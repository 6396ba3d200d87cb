"""Timers on the whole device: the built-in agent sets one by voice, it rings with the
timer earcon until "stop" is said (no wake word while it rings) or the button is
pressed, the LEDs show it, the LED ring counts a running one down while idle, and
timers survive a restart, as the retained MQTT state on a real mosquitto with the
shipped ACL shows."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path

from gpiozero import Device
from gpiozero.pins.mock import MockFactory
from support.apa102 import Apa102Strip
from support.device_commands import Commands, device_overrides
from support.device_harness import PHRASES, WAKE_PHRASE, running_device, voice
from support.mosquitto import Broker
from support.mqtt_fakes import Observer

from edgevoice.device.events import EventType
from edgevoice.device.hardware.gpio import LedPattern
from edgevoice.device.hardware.ledring import OFF, apa102_frame, countdown_colors, pattern_colors
from edgevoice.device.runtime.state import State
from edgevoice.device.timers.service import TIMER_EVENT

TIMER_PHRASES = ("set a timer for two seconds", "set a pasta timer for ten minutes",
                 "how long is left", "cancel the timer", "stop")
GRAMMAR = "asr.grammar=[" + ", ".join(f'"{p}"' for p in (*PHRASES, *TIMER_PHRASES)) + "]"
WAKEWORD = ["listen.mode=wakeword", "listen.wakeword=okay_nabu", "listen.follow_up_s=3", "llm.provider=local"]
RING = ["gpio.enabled=true", "gpio.button_pin=-1", "gpio.led_pin=-1", 'gpio.led_ring="apa102"',
        "gpio.led_ring_count=12", "gpio.led_brightness=1.0"]


def warm_voices() -> None:
    """Synthesised before the device runs: at speed 0 the room's clock races on meanwhile."""
    for phrase in TIMER_PHRASES:
        voice(phrase)


async def test_a_timer_set_by_voice_rings_until_stop_is_said_without_the_wake_word(tmp_path: Path) -> None:
    warm_voices()
    async with running_device(tmp_path, [*WAKEWORD, GRAMMAR]) as device:
        daemon = device.daemon
        assert daemon.timers is not None and daemon.conversation is not None
        # Open the conversation as `listen` would (the follow-up window takes the next turn).
        from edgevoice.device.runtime.announce import Announcer

        await Announcer(daemon).listen()
        device.say("set a timer for two seconds", after_s=0.2)
        heard = await device.wait_for(EventType.TRANSCRIPT_USER)
        assert heard.data["text"] == "set a timer for two seconds"
        await device.wait_for(EventType.REPLY_DONE, status="completed")

        def said() -> str:
            return " ".join(e.data["text"] for e in device.of(EventType.TRANSCRIPT_AGENT))

        # The whole confirmation is spoken. (A false barge-in on the device's own reply is
        # resumed from the sentence it cut, so the words can come in a second reply.)
        deadline = time.monotonic() + 20
        while "A timer for 2 seconds, starting now." not in said() and time.monotonic() < deadline:  # noqa: ASYNC110 - reads the event list, leaves the queue to wait_for
            await asyncio.sleep(0.1)
        assert "A timer for 2 seconds, starting now." in said()
        ringing = await device.wait_for(TIMER_EVENT, timeout_s=30, timer_ringing=True)
        assert ringing.data["timers"][0]["name"] == "timer"
        speaker = daemon.speaker
        assert speaker is not None
        deadline = time.monotonic() + 20
        while not speaker.progress("earcon:timer") and time.monotonic() < deadline:
            await device.wait_for(EventType.STATE_CHANGED, timeout_s=20)
        assert speaker.progress("earcon:timer")  # it rings with the timer earcon
        wakes = len(device.of(EventType.WAKE_WORD))
        resets = len(device.of(EventType.SESSION_RESET))
        session = daemon.agent.session_id if daemon.agent else ""
        device.say("stop", after_s=0.5)
        stopped = await device.wait_for(TIMER_EVENT, timeout_s=30, timer_ringing=False)
        assert stopped.data["timers"] == []
        assert len(device.of(EventType.WAKE_WORD)) == wakes  # no wake word was needed
        # "stop" silenced the timer; it did not end or reset the conversation
        assert len(device.of(EventType.SESSION_RESET)) == resets
        assert daemon.agent is not None and daemon.agent.session_id == session
        assert not daemon.timers.book.timers


async def test_the_button_stops_a_ringing_timer_and_the_led_ring_shows_it(tmp_path: Path) -> None:
    factory = MockFactory()
    async with running_device(tmp_path, ["llm.provider=local", "gpio.enabled=true", "gpio.button_pin=17",
                                         "gpio.led_pin=-1"], pin_factory=factory) as device:
        daemon = device.daemon
        assert daemon.timers is not None
        shown: list[object] = []

        class Recorder:
            def show(self, pattern: object) -> None:
                shown.append(pattern)

            def close(self) -> None:
                pass

        daemon._led = Recorder()  # type: ignore[assignment]  # the status LED's interface
        await daemon.control.timers_action("set", "tea", 1.0)
        await device.wait_for(TIMER_EVENT, timeout_s=30, timer_ringing=True)
        from edgevoice.device.runtime.timer_hooks import RINGING_LED

        assert RINGING_LED in shown
        presses = len(device.of("button.pressed"))
        factory.pin(17).drive_low()
        await device.wait_for(TIMER_EVENT, timeout_s=10, timer_ringing=False)
        factory.pin(17).drive_high()
        assert len(device.of("button.pressed")) == presses + 1
        assert daemon.conversation is not None and daemon.conversation.state == "idle"  # nothing else
        assert shown[-1] != RINGING_LED


async def test_the_led_ring_counts_down_the_running_timer_while_idle_until_it_is_cancelled(
        tmp_path: Path) -> None:
    warm_voices()
    factory = MockFactory()
    previous, Device.pin_factory = Device.pin_factory, factory  # the mock SPI's software pins
    strip = Apa102Strip(factory)
    # each countdown frame, by how many of the twelve LEDs it lights
    lit_by_frame = {tuple(apa102_frame(countdown_colors(n / 12, 12), 31)): n for n in range(1, 13)}
    idle = apa102_frame([OFF] * 12, 31)
    listening = apa102_frame(pattern_colors(LedPattern.LISTENING, 12, 0), 31)

    def lit_counts(frames: list[list[int]]) -> list[int]:
        return [lit_by_frame[tuple(f)] for f in frames if tuple(f) in lit_by_frame]

    async def until(done: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not done() and time.monotonic() < deadline:  # noqa: ASYNC110 - the ring's own thread writes the frames
            await asyncio.sleep(0.05)
        return done()

    try:
        async with running_device(tmp_path, [*WAKEWORD, GRAMMAR, *RING], pin_factory=factory) as device:
            daemon = device.daemon
            assert daemon._ring is not None and daemon.timers is not None and daemon.conversation is not None
            assert daemon.conversation.state is State.IDLE  # waiting for the wake word: the ring is dark
            assert lit_counts(strip.frames) == []
            await daemon.timers.handle("set", "tea", 20.0)
            assert await until(lambda: 12 in lit_counts(strip.frames), 5), "no countdown on the ring"
            # A turn in between: the ring shows it, then the countdown again once idle.
            device.say(WAKE_PHRASE, after_s=0.5)
            await device.wait_for(EventType.WAKE_WORD, name="okay_nabu")
            device.say("how long is left", after_s=0.6)
            heard = await device.wait_for(EventType.TRANSCRIPT_USER)
            assert heard.data["text"] == "how long is left"
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            said = " ".join(e.data["text"] for e in device.of(EventType.TRANSCRIPT_AGENT))
            assert "The tea timer has" in said, said
            assert await until(lambda: daemon.conversation is not None
                               and daemon.conversation.state is State.IDLE, 20)
            assert listening in strip.frames, "the turn's pattern never covered the countdown"
            after_turn = len(strip.frames)
            assert await until(lambda: len(set(lit_counts(strip.frames[after_turn:]))) >= 2, 10), \
                lit_counts(strip.frames)
            lit = lit_counts(strip.frames)
            # full when set, then fewer LEDs as the seconds pass (20 s on 12 LEDs)
            assert lit[0] == 12 and lit == sorted(lit, reverse=True), lit
            before = len(strip.frames)
            await daemon.timers.handle("cancel", "tea")
            assert await until(lambda: idle in strip.frames[before:], 5), "the ring did not go back to idle"
            dark = before + strip.frames[before:].index(idle)
            await asyncio.sleep(1.5)  # the timers' once-a-second pass draws no countdown again
            assert lit_counts(strip.frames[dark:]) == []
            assert strip.frames[-1] == idle and daemon._ring.countdown is None
    finally:
        strip.close()
        factory.reset()
        Device.pin_factory = previous


async def test_timers_survive_a_restart(tmp_path: Path, broker: Broker) -> None:
    warm_voices()
    observer = Observer(broker)
    command = Commands(observer, "dev1")
    observer.subscribe("edgevoice/dev1/state")
    try:
        async with running_device(tmp_path, [*device_overrides(broker, "dev1"), GRAMMAR]) as device:
            await command.online()
            device.say("set a pasta timer for ten minutes")
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            assert device.daemon.timers is not None
            assert [t.name for t in device.daemon.timers.book.timers] == ["pasta"]
        stopped_at = time.time()
        assert (tmp_path / "state" / "timers.json").exists()
        observer.clear()
        async with running_device(tmp_path, [*device_overrides(broker, "dev1"), GRAMMAR]) as device:
            await command.online()
            state = await observer.await_for(lambda m: m.topic == "edgevoice/dev1/state"
                                             and bool(m.json().get("timers")), 30)
            timers = state[-1].json()["timers"]
            assert [t["name"] for t in timers] == ["pasta"]
            assert 540 < timers[0]["remaining_s"] <= 600 - (time.time() - stopped_at) + 1
            assert state[-1].json()["next_timer_at"]
            device.say("how long is left")
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            said = " ".join(e.data["text"] for e in device.of(EventType.TRANSCRIPT_AGENT))
            # what is left, as the state said it (a restart within a second still reads
            # "10 minutes": the time left is rounded up to whole seconds)
            spoken = re.search(r"The pasta timer has (.+?) left", said)
            assert spoken, said
            left_s = sum(int(n) * {"minute": 60, "second": 1}[unit]
                         for n, unit in re.findall(r"(\d+) (minute|second)s?", spoken.group(1)))
            assert timers[0]["remaining_s"] - 30 < left_s <= timers[0]["remaining_s"] + 1, said
            device.say("cancel the timer")
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            assert device.daemon.timers is not None and device.daemon.timers.book.timers == ()
    finally:
        observer.close()
