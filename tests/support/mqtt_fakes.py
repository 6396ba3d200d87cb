"""What the MQTT tests talk to: a command target that really holds state, and an
observer client (a real paho client) that records what the broker delivers."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from support.mosquitto import Broker, password_of

from edgevoice.device.config.loader import build_config, read_toml, revision, to_dict
from edgevoice.device.config.persist import persist_patch
from edgevoice.device.config.schema import DeviceConfig, GpioOutputConfig, MqttConfig
from edgevoice.device.control import DeviceControl
from edgevoice.device.events import EventBus, EventType
from edgevoice.device.mqtt import MqttBridge
from edgevoice.device.mqtt.commands import fetch_model_in_thread
from edgevoice.device.mqtt.telemetry import TelemetrySource


class FakeTarget(DeviceControl):
    """Implements the runtime's side for real: state held here, config persisted to a
    real file with :func:`persist_patch`, events emitted on the bus."""

    def __init__(self, bus: EventBus, config_path: Path) -> None:
        self.bus = bus
        self.config_path = config_path
        self.models_dir = config_path.parent / "models"
        self.conversation = "idle"
        self.volume = 1.0
        self.mic_muted = False
        self.said: list[str] = []
        self.interrupts = 0
        self.sessions = 1
        self.reloads = 0
        self.restarts = 0
        self.fetched: list[str] = []
        self.synced: list[tuple[str, str]] = []

    def _config(self) -> Any:
        raw = read_toml(self.config_path) if self.config_path.exists() else {}
        return build_config([(str(self.config_path), raw)])

    async def say(self, text: str) -> None:
        self.said.append(text)
        self.conversation = "speaking"
        self.bus.emit(EventType.STATE_CHANGED, state="speaking")

    async def interrupt(self) -> None:
        self.interrupts += 1
        self.conversation = "listening"
        self.bus.emit(EventType.STATE_CHANGED, state="listening")

    async def reset_session(self) -> None:
        self.sessions += 1
        self.bus.emit(EventType.SESSION_RESET, session=self.sessions)

    async def set_volume(self, level: float) -> float:
        self.volume = level
        self.bus.emit(EventType.VOLUME_CHANGED, volume=level)
        return level

    async def end_conversation(self) -> None:
        self.conversation = "idle"

    async def start_over(self) -> None:
        await self.reset_session()

    async def gpio_output(self, output: GpioOutputConfig, on: bool | None) -> bool:
        raise NotImplementedError("the MQTT fake drives no pins")  # no MQTT command reaches it

    async def mute(self, mic: bool) -> None:
        self.mic_muted = mic
        self.bus.emit(EventType.MIC_MUTED, muted=mic)

    async def get_config(self) -> dict[str, Any]:
        return to_dict(self._config(), redact=True)

    async def set_config(self, patch: dict[str, Any]) -> dict[str, Any]:
        result = persist_patch(self.config_path, patch)
        if "audio.volume" in result.changed:
            self.volume = result.config.audio.volume
        return result.as_dict()

    async def reload(self) -> None:
        self.reloads += 1
        self.bus.emit(EventType.CONFIG_RELOADED, revision=revision(self._config()))

    async def restart(self) -> None:
        self.restarts += 1

    async def fetch_model(self, name: str) -> dict[str, Any]:
        result = await fetch_model_in_thread(name, self.models_dir)  # the real registry
        self.fetched.append(name)
        return result

    async def knowledge_sync(self, url: str, sha256: str) -> dict[str, Any]:
        # The real one (daemon + KnowledgeBase) is tested in tests/knowledge/test_knowledge_sync.py.
        self.synced.append((url, sha256))
        return {"bundle": {"url": url, "sha256": sha256}}

    async def state(self) -> dict[str, Any]:
        return {
            "state": self.conversation,
            "volume": self.volume,
            "mic_muted": self.mic_muted,
            "provider": "local",
            "config_revision": revision(self._config()),
            "session": self.sessions,
        }


def mqtt_config(broker: Broker, user: str, *, tls: bool = False, **overrides: Any) -> MqttConfig:
    values: dict[str, Any] = {
        "url": broker.tls_url if tls else broker.url,
        "username": user,
        "password": password_of(user),
        "telemetry_interval_s": 0.2,
        "reconnect_min_s": 0.05,
        "reconnect_max_s": 0.3,
        "keepalive": 5,
    }
    if tls:
        values["ca_file"] = str(broker.pki.ca_file)
    values.update(overrides)
    return build_config([("test", {"mqtt": values})]).mqtt


def device_config(group: str = "", name: str = "") -> DeviceConfig:
    return DeviceConfig(group=group, name=name)


@dataclass
class Received:
    topic: str
    payload: bytes
    retain: bool
    properties: Properties | None

    def json(self) -> Any:
        return json.loads(self.payload)


class Observer:
    """A blocking paho client on its own thread that records every message."""

    def __init__(self, broker: Broker, user: str = "fleet", *, protocol: int = mqtt.MQTTv5,
                 persistent_session: bool = False) -> None:
        """``persistent_session``: the broker keeps this client's subscriptions and
        queues its QoS 1 messages while it is away (MQTT 5 session expiry)."""
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"obs-{uuid.uuid4().hex[:8]}",
                                  protocol=protocol)
        self.client.reconnect_delay_set(0.05, 0.2)  # type: ignore[arg-type]
        self.client.username_pw_set(user, password_of(user))
        self.messages: list[Received] = []
        self._cond = threading.Condition()
        self.client.on_message = self._on_message
        self._subacks: list[list[Any]] = []
        self.client.on_subscribe = self._on_subscribe
        if persistent_session:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = 600
            self.client.connect("127.0.0.1", broker.port, keepalive=10, clean_start=False,
                                properties=props)
        else:
            self.client.connect("127.0.0.1", broker.port, keepalive=10)
        self.client.loop_start()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        with self._cond:
            self.messages.append(Received(message.topic, bytes(message.payload), bool(message.retain),
                                          getattr(message, "properties", None)))
            self._cond.notify_all()

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, codes: Any, props: Any) -> None:
        with self._cond:
            self._subacks.append(list(codes))
            self._cond.notify_all()

    def subscribe(self, *topics: str, timeout_s: float = 5.0) -> None:
        with self._cond:
            before = len(self._subacks)
        self.client.subscribe([(t, 1) for t in topics])
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._subacks) > before, timeout_s):
                raise TimeoutError("no SUBACK")

    def publish(self, topic: str, payload: Any, *, response_topic: str | None = None,
                correlation: bytes | None = None, qos: int = 1, retain: bool = False) -> None:
        props = None
        if response_topic is not None:
            props = Properties(PacketTypes.PUBLISH)
            props.ResponseTopic = response_topic
            if correlation is not None:
                props.CorrelationData = correlation
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.client.publish(topic, body, qos, retain, properties=props).wait_for_publish(5)

    def wait_for(self, predicate: Callable[[Received], bool], timeout_s: float = 5.0,
                 count: int = 1) -> list[Received]:
        def found() -> list[Received]:
            return [m for m in self.messages if predicate(m)]

        with self._cond:
            self._cond.wait_for(lambda: len(found()) >= count, timeout_s)
            hits = found()
        if len(hits) < count:
            seen = "\n".join(f"  {m.topic} {m.payload[:120]!r}" for m in self.messages[-15:])
            raise AssertionError(f"expected {count} matching message(s), got {len(hits)}; last seen:\n{seen}")
        return hits

    def on(self, topic: str, timeout_s: float = 5.0, count: int = 1) -> list[Received]:
        return self.wait_for(lambda m: m.topic == topic, timeout_s, count)

    # From async tests: wait in a worker thread so the bridge's loop keeps running.
    async def await_for(self, predicate: Callable[[Received], bool], timeout_s: float = 5.0,
                        count: int = 1) -> list[Received]:
        return await asyncio.to_thread(self.wait_for, predicate, timeout_s, count)

    async def await_on(self, topic: str, timeout_s: float = 5.0, count: int = 1) -> list[Received]:
        return await asyncio.to_thread(self.on, topic, timeout_s, count)

    def clear(self) -> None:
        with self._cond:
            self.messages.clear()

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


async def await_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


@asynccontextmanager
async def running_device(
    broker: Broker, user: str, tmp_path: Path, *, group: str = "", name: str = "",
    source: TelemetrySource | None = None, wait: bool = True, **cfg: Any,
) -> AsyncIterator[tuple[MqttBridge, FakeTarget, EventBus]]:
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    target = FakeTarget(bus, tmp_path / f"{user}.toml")
    bridge = MqttBridge(mqtt_config(broker, user, **cfg), device_config(group, name), user, bus, target,
                        source)
    await bridge.start()
    try:
        if wait:
            assert await await_until(lambda: bridge.connected), broker.log
        yield bridge, target, bus
    finally:
        await bridge.stop()
