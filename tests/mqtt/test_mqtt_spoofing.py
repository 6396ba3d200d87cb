"""A fleet that cannot be spoofed: a device that answers for another is not believed.

Real mosquitto with the shipped ACL (image/mosquitto/acl). The fleet tool attributes
each answer by the topic it arrived on, which the ACL ties to the sender's login; an
answer whose ``device`` field claims somebody else is dropped and counted."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from support.mosquitto import Broker, password_of
from support.mqtt_fakes import Observer, running_device

from edgevoice.device.config.loader import build_config
from edgevoice.device.mqtt.fleet import Addressee, FleetClient, SendReport


def fleet_config(broker: Broker, protocol: str = "5") -> Any:
    return build_config([("t", {"mqtt": {"url": broker.url, "username": "fleet",
                                         "password": password_of("fleet"),
                                         "protocol": protocol}})]).mqtt


class Impostor(Observer):
    """Logged in as ``user`` (a real device login); answers every request it can read
    claiming to be ``victim``, on every topic it might get away with."""

    def __init__(self, broker: Broker, user: str, victim: str, protocol: int = mqtt.MQTTv5) -> None:
        super().__init__(broker, user, protocol=protocol)
        self.user = user
        self.victim = victim
        self.forged = 0
        self._lock = threading.Lock()
        self.client.on_message = self._answer_for_victim

    def _answer_for_victim(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        try:
            request_id = json.loads(message.payload)["id"]
        except (ValueError, KeyError, TypeError):
            return
        body = {"id": request_id, "device": self.victim, "ok": True, "result": {"pong": True}}
        payload = json.dumps(body).encode()
        props = getattr(message, "properties", None)
        response = getattr(props, "ResponseTopic", None) if props is not None else None
        targets = [f"edgevoice/{self.victim}/cmd_result", f"edgevoice/{self.user}/cmd_result"]
        if response:
            # the victim's own answer topic (the ACL drops it), then its own (the fleet drops it)
            targets += [f"{response}/{self.victim}", f"{response}/{self.user}", response]
        for topic in targets:
            out = mqtt.Properties(mqtt.PacketTypes.PUBLISH) if response else None
            if out is not None:
                out.CorrelationData = props.CorrelationData
            client.publish(topic, payload, 1, properties=out)
        with self._lock:
            self.forged += 1


async def send(fleet: FleetClient, to: Addressee, wait_s: float, expected: list[str]) -> SendReport:
    return await asyncio.to_thread(fleet.send, to, "ping", {}, wait_s=wait_s, expected=expected)


async def test_an_answer_for_another_device_is_not_believed_mqtt5(broker: Broker, tmp_path: Path) -> None:
    # dev1 is online but silent; dev2 is a real device login that answers as dev1.
    impostor = Impostor(broker, "dev2", victim="dev1")
    try:
        impostor.subscribe("edgevoice/all/cmd/+")
        async with running_device(broker, "dev3", tmp_path):
            with FleetClient(fleet_config(broker)) as fleet:
                report = await send(fleet, Addressee(everyone=True), 1.0, ["dev1", "dev3"])
        assert impostor.forged == 1
        assert sorted(report.answers) == ["dev3"]
        assert report.answers["dev3"]["ok"]
        assert report.missing == ["dev1"]  # the forged answers did not stand in for it
        # Of the five forged publishes only the one on dev2's own answer topic got through
        # the ACL; it claimed dev1 and was dropped and counted.
        assert report.impostors == {"dev2": ["dev1"]}
        assert report.dropped == 1
        assert not report.all_ok
        assert report.as_dict()["dropped_impostor_answers"] == 1
    finally:
        impostor.close()


async def test_an_answer_for_another_device_is_not_believed_mqtt311(broker: Broker,
                                                                     tmp_path: Path) -> None:
    impostor = Impostor(broker, "dev2", victim="dev1", protocol=mqtt.MQTTv311)
    try:
        impostor.subscribe("edgevoice/all/cmd/+")
        async with running_device(broker, "dev3", tmp_path, protocol="3.1.1"):
            with FleetClient(fleet_config(broker, "3.1.1")) as fleet:
                report = await send(fleet, Addressee(everyone=True), 1.0, ["dev1", "dev3"])
        assert impostor.forged == 1
        assert sorted(report.answers) == ["dev3"]
        assert report.missing == ["dev1"]
        assert report.impostors == {"dev2": ["dev1"]}
    finally:
        impostor.close()


async def test_a_device_cannot_write_another_devices_answer_topic(broker: Broker) -> None:
    """The broker's half: dev2 publishing on dev1's reply level reaches nobody."""
    watch = Observer(broker)
    spy = Observer(broker, "dev2")
    try:
        watch.subscribe("edgevoice/reply/#", "edgevoice/+/cmd_result")
        spy.publish("edgevoice/reply/tool/dev1", {"id": "x", "device": "dev1", "ok": True})
        spy.publish("edgevoice/reply/tool", {"id": "x", "device": "dev1", "ok": True})
        spy.publish("edgevoice/dev1/cmd_result", {"id": "x", "device": "dev1", "ok": True})
        spy.publish("edgevoice/reply/tool/dev2", {"id": "x", "device": "dev2", "ok": True})
        got = await watch.await_on("edgevoice/reply/tool/dev2")
        assert got[0].json()["device"] == "dev2"
        await asyncio.sleep(0.2)
        assert [m.topic for m in watch.messages] == ["edgevoice/reply/tool/dev2"]
    finally:
        watch.close()
        spy.close()
