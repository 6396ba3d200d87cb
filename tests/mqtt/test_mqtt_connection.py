"""MqttConnection against a real mosquitto: "connected" means commands can arrive."""

from __future__ import annotations

import threading
import time

from support.mosquitto import Broker
from support.mqtt_fakes import Observer, mqtt_config

from edgevoice.device.mqtt.connection import MqttConnection, Outgoing


def test_a_command_sent_the_moment_the_device_is_connected_is_delivered(broker: Broker) -> None:
    observer = Observer(broker)
    try:
        for attempt in range(20):
            ready, received = threading.Event(), list[str]()
            conn = MqttConnection(
                mqtt_config(broker, "dev1"),
                "dev1-test",
                birth=lambda: [Outgoing("edgevoice/dev1/status", b"online", 1, True)],
                subscriptions=["edgevoice/dev1/cmd/+"],
                on_message=lambda m, into=received: into.append(m.topic),
                on_connected=lambda dropped, ready=ready: ready.set(),
            )
            conn.start()
            try:
                assert ready.wait(5) and conn.connected
                observer.publish("edgevoice/dev1/cmd/ping", {"id": attempt})
                deadline = time.monotonic() + 2
                while not received and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert received == ["edgevoice/dev1/cmd/ping"], f"attempt {attempt}"
            finally:
                conn.stop()
    finally:
        observer.close()
