"""``announce`` and ``listen`` on the real daemon over a real mosquitto with the shipped
ACL, from the outside in: every bad input answers its documented code and changes
nothing (nothing played, no turn opened, a reply in flight not cut); an announcement to a
group reaches the group's devices only, one to all reaches every device; one that arrives
while a person's turn is open waits for that turn (and its reply) to end, and an urgent
one drops the turn at once.

A person's turn is held open with push-to-talk (gpiozero's MockFactory button held
down): it ends when the button is released and at no other time, so "the announcement
arrived while the turn was open" is certain, whatever the simulated room's clock (which
runs far faster than the test's wall clock) did meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory
from support.device_commands import device_overrides
from support.device_harness import Device, running_device, voice
from support.mosquitto import Broker
from support.mqtt_fakes import Observer, mqtt_config

from edgevoice.device.events import EventType
from edgevoice.device.mqtt.fleet import Addressee, FleetClient

# Many requests back to back: the rate limit (20 then 5/s) is tested elsewhere.
UNLIMITED = ["mqtt.command_rate=1000", "mqtt.command_burst=1000"]
# A held button is the turn: no silence, no timeout and (almost) no length ends it.
PUSH_TO_TALK = ["gpio.enabled=true", "gpio.button_pin=17", "listen.mode=button",
                "listen.button_mode=hold", "endpoint.max_turn_s=300"]
# What a bad request must not have caused.
SIDE_EFFECTS = (EventType.STATE_CHANGED, EventType.REPLY_STARTED, EventType.REPLY_DONE,
                EventType.TRANSCRIPT_AGENT, EventType.WAKE_WORD, EventType.TURN_DISCARDED)


class Requests:
    """Raw payloads on ``edgevoice/<device>/cmd/<name>``, answered on an MQTT 5 response
    topic and matched by correlation data: a payload that is not JSON, or has no id, is
    still paired with its answer."""

    def __init__(self, observer: Observer, device_id: str) -> None:
        self.observer = observer
        self.device_id = device_id
        self.base = f"edgevoice/reply/test-{uuid.uuid4().hex[:8]}"
        observer.subscribe(f"{self.base}/+", f"edgevoice/{device_id}/status")

    async def online(self, timeout_s: float = 30) -> None:
        await self.observer.await_for(lambda m: m.topic == f"edgevoice/{self.device_id}/status"
                                      and m.json().get("state") == "online", timeout_s)

    async def raw(self, name: str, payload: bytes, timeout_s: float = 30) -> dict[str, Any]:
        correlation = uuid.uuid4().hex.encode()
        self.observer.publish(f"edgevoice/{self.device_id}/cmd/{name}", payload,
                              response_topic=self.base, correlation=correlation)
        topic = f"{self.base}/{self.device_id}"  # the only reply topic the ACL lets it write
        hits = await self.observer.await_for(
            lambda m: m.topic == topic and m.properties is not None
            and getattr(m.properties, "CorrelationData", None) == correlation, timeout_s)
        answer: dict[str, Any] = hits[-1].json()
        return answer

    async def __call__(self, name: str, args: dict[str, Any] | None = None,
                       timeout_s: float = 30) -> dict[str, Any]:
        return await self.raw(name, json.dumps(args or {}).encode(), timeout_s)


@pytest.fixture
def factory() -> Iterator[MockFactory]:
    mock = MockFactory()
    yield mock
    mock.reset()


def spoken(device: Device, text: str) -> list[int]:
    """Where in the device's events ``text`` was spoken (one index per time)."""
    return [i for i, e in enumerate(device.events)
            if e.type == EventType.TRANSCRIPT_AGENT and e.data["text"] == text]


def announce_chimes(device: Device) -> int:
    assert device.daemon.speaker is not None
    return len(device.daemon.speaker.progress("earcon:announce"))


async def until(predicate: Any, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.005)


async def said(device: Device, text: str) -> None:
    """The person says ``text`` into the room; back when the room's clock has passed its
    end (a held push-to-talk turn reports no end of speech until it is released)."""
    end = device.say(text, after_s=0.2) + len(voice(text)) / 16000
    await device.wait_for(EventType.SPEECH_STARTED)
    await until(lambda: device.room.now_s > end + 0.3)


@asynccontextmanager
async def holding_a_turn(tmp_path: Path, broker: Broker,
                         factory: MockFactory) -> AsyncIterator[tuple[Device, Requests, Any]]:
    """The device online in push-to-talk, the person holding the button: a turn is open
    (listening) until the test releases the pin it is given."""
    observer = Observer(broker)
    request = Requests(observer, "dev1")
    try:
        async with running_device(tmp_path, [*device_overrides(broker, "dev1"), *PUSH_TO_TALK],
                                  pin_factory=factory) as device:
            await request.online()
            button = factory.pin(17)
            button.drive_low()  # the person holds the button and speaks
            await device.wait_for(EventType.STATE_CHANGED, state="listening")
            yield device, request, button
    finally:
        observer.close()



LONG = "x" * 2001
# (command, payload, code, a fragment the message must contain: it says what is wrong)
BAD_INPUTS: list[tuple[str, bytes, str, str]] = [
    ("announce", b"{}", "missing_argument", "exactly one of 'text'"),
    ("announce", b"", "missing_argument", "exactly one of 'text'"),  # empty payload is {}
    ("announce", b'{"then_listen": true}', "missing_argument", "exactly one of 'text'"),
    ("announce", b'{"text": "Dinner", "url": "http://127.0.0.1:9/a.wav"}', "invalid_argument",
     "exactly one of 'text'"),
    ("announce", b'{"text": ""}', "invalid_argument", "'text' must not be empty"),
    ("announce", b'{"text": "   "}', "invalid_argument", "'text' must not be empty"),
    ("announce", b'{"text": 5}', "invalid_argument", "'text' must be a string"),
    ("announce", b'{"text": null}', "invalid_argument", "'text' must be a string"),
    ("announce", json.dumps({"text": LONG}).encode(), "invalid_argument", "longer than 2000"),
    ("announce", b'{"url": "file:///etc/passwd"}', "invalid_argument", "'url' must be an http"),
    ("announce", b'{"url": "ftp://127.0.0.1/a.wav"}', "invalid_argument", "'url' must be an http"),
    ("announce", b'{"url": "http:///a.wav"}', "invalid_argument", "'url' must be an http"),
    ("announce", b'{"url": "not a url"}', "invalid_argument", "'url' must be an http"),
    ("announce", b'{"url": 7}', "invalid_argument", "'url' must be a string"),
    ("announce", b'{"text": "Dinner", "then_listen": "yes"}', "invalid_argument",
     "'then_listen' must be true or false"),
    ("announce", b'{"text": "Dinner", "then_listen": 1}', "invalid_argument",
     "'then_listen' must be true or false"),
    ("announce", b'{"text": "Dinner", "priority": "high"}', "invalid_argument",
     "'priority' must be one of normal, urgent"),
    ("announce", b'{"text": "Dinner", "priority": "URGENT"}', "invalid_argument",
     "'priority' must be one of normal, urgent"),
    ("announce", b'{"text": "Dinner", "priority": 1}', "invalid_argument", "'priority' must be a string"),
    ("announce", b'{"text": "Dinner", "wait_s": -1}', "invalid_argument", "'wait_s' must be >= 0"),
    ("announce", b'{"text": "Dinner", "wait_s": 601}', "invalid_argument", "'wait_s' must be <= 600"),
    ("announce", b'{"text": "Dinner", "wait_s": "5"}', "invalid_argument", "'wait_s' must be a number"),
    ("announce", b'{"text": "Dinner", "wait_s": NaN}', "invalid_argument", "'wait_s' must be a number"),
    ("announce", b'{"text": "Dinner", "wait_s": true}', "invalid_argument", "'wait_s' must be a number"),
    ("announce", b'{"text": "Dinner", "volume": 1}', "invalid_argument", "no argument 'volume'"),
    ("announce", b"Dinner is ready", "invalid_json", "not valid JSON"),
    ("announce", b'{"text": "Dinner"', "invalid_json", "not valid JSON"),
    ("announce", b'["Dinner"]', "invalid_request", "JSON object"),
    ("announce", b'"Dinner is ready"', "invalid_request", "JSON object"),
    ("listen", b'{"now": true}', "invalid_argument", "no argument 'now'"),
    ("listen", b"listen now", "invalid_json", "not valid JSON"),
    ("listen", b"[]", "invalid_request", "JSON object"),
]


async def test_every_bad_input_answers_its_code_and_changes_nothing(tmp_path: Path, broker: Broker) -> None:
    observer = Observer(broker)
    request = Requests(observer, "dev1")
    try:
        async with running_device(tmp_path, [*device_overrides(broker, "dev1"), *UNLIMITED]) as device:
            await request.online()
            conversation, speaker = device.daemon.conversation, device.daemon.speaker
            assert conversation is not None and speaker is not None
            await until(lambda: conversation.state == "idle" and not speaker.is_playing())
            before = len(device.events)
            for name, payload, code, fragment in BAD_INPUTS:
                answer = await request.raw(name, payload)
                assert answer["ok"] is False and answer["device"] == "dev1", (payload, answer)
                assert answer["error"]["code"] == code, (payload, answer)
                assert fragment in answer["error"]["message"], (payload, answer)
                assert conversation.state == "idle" and not conversation.front.listener.in_turn, payload
            assert [e.type for e in device.events[before:] if e.type in SIDE_EFFECTS] == []
            assert announce_chimes(device) == 0 and speaker.progress("earcon:wake") == []
            assert speaker.progress("announce-audio") == [] and not speaker.is_playing()

            # An urgent announcement with a bad argument does not cut the reply in flight.
            story = "This sentence goes on for a while, so a bad urgent announcement can arrive in it."
            assert (await request("say", {"text": story}))["ok"]
            await device.wait_for(EventType.REPLY_STARTED)
            for bad in ({"text": LONG, "priority": "urgent"}, {"text": "Fire", "priority": "urgent", "x": 1},
                        {"text": "Fire", "url": "http://127.0.0.1:9/a.wav", "priority": "urgent"}):
                answer = await request("announce", bad)
                assert answer["error"]["code"] == "invalid_argument", answer
            assert (await device.wait_for(EventType.REPLY_DONE)).data["status"] == "completed"
            assert announce_chimes(device) == 0 and spoken(device, "Fire") == []

            # The same device does announce and listen when asked properly: what was looked
            # for above is what a good request does.
            good = await request("announce", {"text": "Dinner is ready.", "wait_s": 0}, timeout_s=60)
            assert good["ok"], good
            assert announce_chimes(device) == 1 and len(spoken(device, "Dinner is ready.")) == 1
            assert (await request("listen"))["result"] == {"listening": True}
            assert conversation.state == "listening"
    finally:
        observer.close()


async def test_announce_to_a_group_and_to_all_over_the_fleet_client(tmp_path: Path, broker: Broker) -> None:
    """``fleet send --group hall announce`` plays on the hall's device and not on the attic's;
    to all it plays on both. Each answer arrives on the fleet tool's reply topic, named by
    the device (the shipped ACL lets a device write only its own)."""
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    fleet = FleetClient(mqtt_config(broker, "fleet"))
    async with (
        running_device(tmp_path / "a", device_overrides(broker, "dev1", "hall")) as hall,
        running_device(tmp_path / "b", device_overrides(broker, "dev2", "attic")) as attic,
    ):
        await asyncio.to_thread(fleet.connect)
        try:
            deadline = time.monotonic() + 30
            # the fleet tool finds the devices of a group in their retained status
            while (groups := {d.id: d.group for d in await asyncio.to_thread(fleet.list_devices)
                              if d.online}) != {"dev1": "hall", "dev2": "attic"}:
                assert time.monotonic() < deadline, groups
                await asyncio.sleep(0.05)
            report = await asyncio.to_thread(fleet.send, Addressee(group="hall"), "announce",
                                             {"text": "The hall light is on."}, wait_s=30)
            assert report.expected == ["dev1"] and report.all_ok, report.as_dict()
            assert report.answers["dev1"]["result"]["played"] is True
            assert len(spoken(hall, "The hall light is on.")) == 1 and announce_chimes(hall) == 1

            report = await asyncio.to_thread(fleet.send, Addressee(everyone=True), "announce",
                                             {"text": "Dinner is ready."}, wait_s=30)
            assert report.expected == ["dev1", "dev2"] and report.all_ok, report.as_dict()
            assert all(a["result"]["played"] is True for a in report.answers.values())
            for device in (hall, attic):
                assert len(spoken(device, "Dinner is ready.")) == 1
            # The attic heard only the announcement to all: the group's never reached it
            # (it came first on the same connection, so it would have played by now).
            assert spoken(attic, "The hall light is on.") == [] and announce_chimes(attic) == 1
            assert announce_chimes(hall) == 2

            # A bad announcement to all is refused by every device, and nothing plays.
            report = await asyncio.to_thread(fleet.send, Addressee(everyone=True), "announce",
                                             {"text": "Dinner", "priority": "soon"}, wait_s=30)
            assert sorted(report.answers) == ["dev1", "dev2"], report.as_dict()
            assert {a["error"]["code"] for a in report.answers.values()} == {"invalid_argument"}
            assert announce_chimes(hall) == 2 and announce_chimes(attic) == 1
        finally:
            await asyncio.to_thread(fleet.close)


async def test_an_announcement_waits_for_the_persons_turn_and_its_reply(
    tmp_path: Path, broker: Broker, factory: MockFactory
) -> None:
    async with holding_a_turn(tmp_path, broker, factory) as (device, request, button):
        conversation = device.daemon.conversation
        assert conversation is not None
        device.say("hello there", after_s=0.2)
        await device.wait_for(EventType.SPEECH_STARTED)  # the person is speaking

        router = device.daemon.mqtt.router
        handled = router.handled
        pending = asyncio.create_task(request("announce", {"text": "The post has arrived."},
                                              timeout_s=30))
        await until(lambda: router.handled > handled)  # it reached the device, and waits
        heard_to = device.room.now_s
        await until(lambda: device.room.now_s > heard_to + 2.0)  # two more seconds of room
        assert not pending.done() and announce_chimes(device) == 0
        assert conversation.state == "listening"

        button.drive_high()  # the turn ends; the reply to it is spoken; then the announcement
        heard = await device.wait_for(EventType.TRANSCRIPT_USER)
        assert heard.data["text"] == "hello there"
        reply_done = await device.wait_for(EventType.REPLY_DONE)
        assert reply_done.data["status"] == "completed"  # the reply was not cut off either
        answer = await pending
        assert answer["ok"], answer
        result = answer["result"]
        assert result["played"] is True and result["waited_for"] == "listening", result
        assert result["interrupted"] is None and result["barged_in"] is False
        assert result["waited_s"] > 0
        announced = spoken(device, "The post has arrived.")
        assert len(announced) == 1 and device.events.index(reply_done) < announced[0]
        assert device.events.index(heard) < device.events.index(reply_done)
        assert announce_chimes(device) == 1


async def test_an_urgent_announcement_drops_the_persons_turn(
    tmp_path: Path, broker: Broker, factory: MockFactory
) -> None:
    async with holding_a_turn(tmp_path, broker, factory) as (device, request, button):
        conversation = device.daemon.conversation
        assert conversation is not None
        await said(device, "hello there")  # and the button is still held
        assert conversation.state == "listening" and conversation.front.listener.in_turn

        answer = await request("announce", {"text": "Smoke in the kitchen.", "priority": "urgent"},
                               timeout_s=60)
        # It did not wait for the release: the turn was dropped, the announcement played.
        assert answer["ok"], answer
        result = answer["result"]
        assert result["played"] is True and result["interrupted"] == "listening", result
        assert result["waited_for"] is None and result["barged_in"] is False
        assert len(spoken(device, "Smoke in the kitchen.")) == 1 and announce_chimes(device) == 1
        assert conversation.state == "idle" and not conversation.front.listener.in_turn

        button.drive_high()
        heard_to = device.room.now_s
        await until(lambda: device.room.now_s > heard_to + 3.0)
        # What the person said before the announcement never became a turn or a request.
        assert device.of(EventType.TRANSCRIPT_USER) == [] and device.of(EventType.REPLY_REQUESTED) == []
        assert [e.data["utterance_id"] for e in device.of(EventType.REPLY_DONE)] == [
            e.data["utterance_id"] for e in device.of(EventType.REPLY_STARTED)]
        assert len(device.of(EventType.REPLY_DONE)) == 1  # the announcement's, nothing else
        assert conversation.state == "idle"


async def test_an_announcement_to_a_muted_device_is_spoken_and_the_mic_stays_muted(
    tmp_path: Path, broker: Broker
) -> None:
    """The mute is the microphone's: a muted device has no turn to wait for, and the
    announcement is heard (spoken, not only its earcon), normal or urgent alike."""
    observer = Observer(broker)
    request = Requests(observer, "dev1")
    try:
        async with running_device(tmp_path, device_overrides(broker, "dev1")) as device:
            await request.online()
            conversation = device.daemon.conversation
            assert conversation is not None
            assert (await request("mute", {"mic": True}))["ok"]
            assert conversation.state == "muted"
            for priority in ("normal", "urgent"):
                text = f"A {priority} announcement."
                answer = await request("announce", {"text": text, "priority": priority, "then_listen": True},
                                       timeout_s=60)
                assert answer["ok"], answer
                result = answer["result"]
                assert result["played"] is True and result["barged_in"] is False, result
                assert result["listening"] is False  # the mic is muted: no turn opens
                assert result["interrupted"] is None and result["waited_for"] is None
                assert len(spoken(device, text)) == 1, priority
                done = device.of(EventType.REPLY_DONE)[-1]
                assert done.data["status"] == "completed"
                assert conversation.state == "muted"
            assert announce_chimes(device) == 2
            assert (await request("listen"))["error"]["code"] == "busy"  # still muted
    finally:
        observer.close()
