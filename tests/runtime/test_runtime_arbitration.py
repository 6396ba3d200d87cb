"""Wake-word arbitration on the whole device, over a real mosquitto with the shipped ACL:
alone in its room it answers the wake word at once, as without arbitration; when another
device of the room claims louder it stands down without a sound and its LED says so."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from support.device_commands import Commands, device_overrides
from support.device_harness import WAKE_PHRASE, running_device
from support.mosquitto import Broker
from support.mqtt_fakes import Observer, await_until

from edgevoice.device.events import EventType
from edgevoice.device.runtime.arbitration_hook import ARBITRATED_EVENT, STOOD_DOWN_LED

ROOM = ["device.room=kitchen", "listen.mode=wakeword", "listen.wakeword=okay_nabu", "listen.follow_up_s=0"]
TOPIC = "edgevoice/room/kitchen/wake"


class RoomPeer(Observer):
    """Another device of the room (a real device login, dev2): it answers dev1's hello and
    records everything dev1 says on the room topic."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker, "dev2")
        self.heard: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.client.on_message = self._on_message

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        body = json.loads(message.payload)
        if body.get("device") != "dev1":
            return
        if body.get("type") == "hello":
            client.publish(TOPIC, json.dumps({"type": "here", "device": "dev2"}))
        with self.lock:
            self.heard.append(body)
        self.heard_from_dev1(client, body)

    def heard_from_dev1(self, client: mqtt.Client, body: dict[str, Any]) -> None:
        """What this peer does about it (nothing more here)."""

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [b for b in self.heard if b.get("type") == kind]


class LouderPeer(RoomPeer):
    """A peer that always claims louder."""

    @property
    def claims_seen(self) -> list[dict[str, Any]]:
        return self.of("claim")

    def heard_from_dev1(self, client: mqtt.Client, body: dict[str, Any]) -> None:
        if body.get("type") == "claim":
            client.publish(TOPIC, json.dumps({"type": "claim", "device": "dev2", "score": 2.0}))


class Recorder:
    def __init__(self) -> None:
        self.shown: list[object] = []

    def show(self, pattern: object) -> None:
        self.shown.append(pattern)

    def close(self) -> None:
        pass


async def test_alone_in_the_room_the_wake_word_is_answered_at_once(tmp_path: Path, broker: Broker) -> None:
    observer = Observer(broker)
    command = Commands(observer, "dev1")
    try:
        async with running_device(tmp_path, [*device_overrides(broker, "dev1"), *ROOM]) as device:
            await command.online()
            device.say(WAKE_PHRASE, after_s=0.5)
            await device.wait_for(EventType.WAKE_WORD)
            verdict = await device.wait_for(ARBITRATED_EVENT)
            assert verdict.data["verdict"] == "answer"
            assert verdict.data["waited_ms"] < 20  # nobody else in the room: no wait
            await device.wait_for(EventType.STATE_CHANGED, state="listening")
            assert len(device.of(EventType.WAKE_WORD)) == 1  # one detection, one event
    finally:
        observer.close()


async def test_a_louder_device_in_the_room_makes_this_one_stand_down(tmp_path: Path, broker: Broker) -> None:
    observer = Observer(broker)
    command = Commands(observer, "dev1")
    peer = LouderPeer(broker)
    peer.subscribe(TOPIC)
    try:
        async with running_device(tmp_path, [*device_overrides(broker, "dev1"), *ROOM]) as device:
            await command.online()
            led = Recorder()
            device.daemon._led = led  # type: ignore[assignment]  # the status LED's interface
            arbiter = device.daemon.mqtt.arbiter
            assert arbiter is not None
            assert await await_until(lambda: "dev2" in arbiter.room.peers(time.monotonic()), 10)
            device.say(WAKE_PHRASE, after_s=0.5)
            await device.wait_for(EventType.WAKE_WORD)
            verdict = await device.wait_for(ARBITRATED_EVENT)
            assert verdict.data["verdict"] == "stand_down"
            assert verdict.data["score"] > 0 and verdict.data["waited_ms"] < 250
            assert peer.claims_seen and peer.claims_seen[0]["device"] == "dev1"
            # It went back to listening for the wake word only: what is said next is no turn.
            start = device.say("hello there", after_s=0.3)
            assert await await_until(lambda: device.room.now_s > start + 4.0, 60)
            states = [e.data["state"] for e in device.of(EventType.STATE_CHANGED)]
            assert "listening" not in states  # it never opened the turn
            assert device.of(EventType.TRANSCRIPT_USER) == []
            assert device.daemon.speaker is not None
            assert device.daemon.speaker.progress("earcon:wake") == []  # without a sound
            assert STOOD_DOWN_LED in led.shown
    finally:
        peer.close()
        observer.close()


async def test_the_button_is_never_arbitrated(tmp_path: Path, broker: Broker) -> None:
    from gpiozero.pins.mock import MockFactory

    observer = Observer(broker)
    command = Commands(observer, "dev1")
    peer = LouderPeer(broker)
    peer.subscribe(TOPIC)
    factory = MockFactory()
    try:
        overrides = [*device_overrides(broker, "dev1"), *ROOM, "gpio.enabled=true", "gpio.button_pin=17"]
        async with running_device(tmp_path, overrides, pin_factory=factory) as device:
            await command.online()
            arbiter = device.daemon.mqtt.arbiter
            assert arbiter is not None
            assert await await_until(lambda: "dev2" in arbiter.room.peers(time.monotonic()), 10)
            factory.pin(17).drive_low()  # a louder device in the room does not matter
            await device.wait_for(EventType.STATE_CHANGED, state="listening")
            assert arbiter.claim_bound is not None
            assert arbiter.claim_bound() == 0.0  # in a turn of its own it could claim nothing
            factory.pin(17).drive_high()
            assert device.of(ARBITRATED_EVENT) == [] and peer.claims_seen == []
    finally:
        peer.close()
        observer.close()


async def test_a_device_that_cannot_beat_a_claim_passes_then_stands_down_on_its_own_detection(
        tmp_path: Path, broker: Broker) -> None:
    observer = Observer(broker)
    command = Commands(observer, "dev1")
    peer = RoomPeer(broker)  # it claims when the test says
    peer.subscribe(TOPIC)
    try:
        # The widest window: the room runs faster than the wall clock, and the device must
        # hear the wake word within two windows of its pass for the pass to bind it.
        overrides = [*device_overrides(broker, "dev1"), *ROOM, "arbitration.window_ms=2000"]
        async with running_device(tmp_path, overrides) as device:
            await command.online()
            arbiter = device.daemon.mqtt.arbiter
            assert arbiter is not None and arbiter.claim_bound is not None
            assert await await_until(lambda: "dev2" in arbiter.room.peers(time.monotonic()), 10)
            assert arbiter.claim_bound() < 0.01  # an idle, silent room: it could claim very little
            peer.client.publish(TOPIC, json.dumps({"type": "claim", "device": "dev2", "score": 0.5}))
            assert await await_until(lambda: peer.of("pass"), 10), peer.heard
            assert peer.of("pass")[0]["bound"] < 0.5
            device.say(WAKE_PHRASE, after_s=0.2)
            await device.wait_for(EventType.WAKE_WORD)
            verdict = await device.wait_for(ARBITRATED_EVENT)
            # It keeps its word: no claim, no wait, no turn, no sound.
            assert verdict.data["verdict"] == "stand_down" and verdict.data["passed"] is True
            assert verdict.data["waited_ms"] < 20
            assert peer.of("claim") == []
            states = [e.data["state"] for e in device.of(EventType.STATE_CHANGED)]
            assert "listening" not in states
            assert device.daemon.speaker is not None
            assert device.daemon.speaker.progress("earcon:wake") == []
    finally:
        peer.close()
        observer.close()
