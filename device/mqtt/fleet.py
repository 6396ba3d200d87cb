"""The operator's side: list the fleet from retained messages, send a command to a
device, a group or all devices and collect the answers.

Blocking API (for the command line and scripts); paho's thread does the I/O.
Listing is exact without guessing a quiet period: after the wildcard subscriptions
are acknowledged the client publishes to a topic of its own, and the broker delivers
that message after every retained message of the earlier subscriptions.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from edgevoice.device.config.schema import MqttConfig
from edgevoice.device.mqtt.connection import connect_properties, make_client, new_properties, set_nodelay
from edgevoice.device.mqtt.topics import (
    all_command_topic,
    answerer_of,
    device_command_topic,
    device_of,
    group_command_topic,
    reply_topic,
)
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)


class BrokerUnavailableError(EdgeVoiceError, ConnectionError):
    code = "broker_unavailable"


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    id: str
    online: bool
    version: str = ""
    group: str = ""
    name: str = ""
    state: str = ""
    telemetry_age_s: float | None = None
    started_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "online": self.online, "version": self.version, "group": self.group,
            "name": self.name, "state": self.state, "telemetry_age_s": self.telemetry_age_s,
            "started_at": self.started_at,
        }


@dataclass(frozen=True, slots=True)
class Addressee:
    """Exactly one of: a device id, a group, or everyone."""

    device: str | None = None
    group: str | None = None
    everyone: bool = False

    def __post_init__(self) -> None:
        if sum((self.device is not None, self.group is not None, self.everyone)) != 1:
            raise ValueError("address one device, one group, or all")

    def topic(self, prefix: str, command: str) -> str:
        if self.device is not None:
            return device_command_topic(prefix, self.device, command)
        if self.group is not None:
            return group_command_topic(prefix, self.group, command)
        return all_command_topic(prefix, command)

    def covers(self, info: DeviceInfo) -> bool:
        if self.device is not None:
            return info.id == self.device
        if self.group is not None:
            return info.group == self.group
        return True


@dataclass
class SendReport:
    request_id: str
    expected: list[str]
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    elapsed_s: float = 0.0
    # Answers dropped because their "device" field named another device than the
    # topic they arrived on (which the broker's ACL ties to the sender's login):
    # sender (by topic) -> the identities it claimed.
    impostors: dict[str, list[str]] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        """How many answers claimed another identity and were not believed."""
        return sum(len(v) for v in self.impostors.values())

    @property
    def missing(self) -> list[str]:
        return sorted(set(self.expected) - set(self.answers))

    @property
    def all_ok(self) -> bool:
        return (not self.missing and not self.impostors
                and all(a.get("ok") for a in self.answers.values()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.request_id,
            "answers": [self.answers[k] for k in sorted(self.answers)],
            "no_answer": self.missing,
            "dropped_impostor_answers": self.dropped,
            "impostors": {k: list(v) for k, v in sorted(self.impostors.items())},
            "elapsed_s": round(self.elapsed_s, 3),
        }


def summarise(
    prefix: str, messages: Mapping[str, bytes], now: float
) -> dict[str, DeviceInfo]:
    """Device infos from retained ``status``/``state``/``telemetry`` payloads by topic."""
    status: dict[str, dict[str, Any]] = {}
    state: dict[str, dict[str, Any]] = {}
    telemetry: dict[str, dict[str, Any]] = {}
    for topic, payload in messages.items():
        where = device_of(prefix, topic)
        if where is None or not payload:
            continue
        try:
            data = json.loads(payload)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        device_id, leaf = where
        {"status": status, "state": state, "telemetry": telemetry}.get(leaf, {})[device_id] = data
    out: dict[str, DeviceInfo] = {}
    for device_id in sorted(set(status) | set(state)):
        st = status.get(device_id, {})
        tel_ts = telemetry.get(device_id, {}).get("ts")
        age = round(max(0.0, now - float(tel_ts)), 1) if isinstance(tel_ts, int | float) else None
        out[device_id] = DeviceInfo(
            id=device_id,
            online=st.get("state") == "online",
            version=str(st.get("version", "")),
            group=str(st.get("group", "")),
            name=str(st.get("name", "")),
            state=str(state.get(device_id, {}).get("state", "")),
            telemetry_age_s=age,
            started_at=st.get("started_at"),
        )
    return out


class FleetClient:
    """An operator connection. Use as a context manager."""

    def __init__(self, config: MqttConfig, *, client_id: str | None = None) -> None:
        self.config = config
        self.prefix = config.topic_prefix
        self.client_id = client_id or f"edgevoice-fleet-{uuid.uuid4().hex[:10]}"
        self.client, self.address = make_client(config, self.client_id)
        self._cond = threading.Condition()
        self._connected = False
        self._refused = ""
        self._subacks: set[int] = set()
        self._handlers: list[Callable[[mqtt.MQTTMessage], None]] = []
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message

    def __enter__(self) -> FleetClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- connection ---------------------------------------------------------------------

    def connect(self, timeout_s: float = 5.0) -> None:
        try:
            self.client.connect(self.address.host, self.address.port, keepalive=30,
                                properties=connect_properties(self.config.protocol))
        except OSError as err:
            raise BrokerUnavailableError(
                f"cannot reach the MQTT broker at {self.config.url}: {err}; check mqtt.url"
            ) from err
        self.client.loop_start()
        with self._cond:
            self._cond.wait_for(lambda: self._connected or bool(self._refused), timeout_s)
        if not self._connected:
            self.close()
            why = self._refused or f"no answer within {timeout_s:g} s"
            raise BrokerUnavailableError(
                f"the MQTT broker at {self.config.url} did not accept the connection ({why}); "
                "check mqtt.username/password and the TLS files"
            )

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: ReasonCode,
                    properties: Any) -> None:
        with self._cond:
            if reason.is_failure:
                self._refused = str(reason)
            else:
                set_nodelay(client)
                self._connected = True
            self._cond.notify_all()

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, codes: Any, props: Any) -> None:
        with self._cond:
            self._subacks.add(mid)
            self._cond.notify_all()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        for handler in list(self._handlers):
            handler(message)

    def _subscribe(self, topics: list[str], timeout_s: float, qos: int = 1) -> None:
        result, mid = self.client.subscribe([(t, qos) for t in topics])
        if result != mqtt.MQTT_ERR_SUCCESS or mid is None:
            raise BrokerUnavailableError(f"subscribing failed: {mqtt.error_string(result)}")
        with self._cond:
            if not self._cond.wait_for(lambda: mid in self._subacks, timeout_s):
                raise BrokerUnavailableError("the broker did not acknowledge the subscription")

    # --- listing ----------------------------------------------------------------------------

    def retained(self, topics: list[str], timeout_s: float = 5.0) -> dict[str, bytes]:
        """Every retained message on ``topics`` (wildcards allowed), by topic."""
        sentinel = f"{self.prefix}/fleet/{self.client_id}"
        found: dict[str, bytes] = {}
        done = threading.Event()

        def collect(message: mqtt.MQTTMessage) -> None:
            if message.topic == sentinel:
                done.set()
            elif message.retain:
                found[message.topic] = bytes(message.payload)

        self._handlers.append(collect)
        try:
            self._subscribe([sentinel], timeout_s)
            # QoS 0: the broker sends retained messages without waiting for an ack of each
            # (at QoS 1 its 20-message in-flight window made 6 000 retained messages of
            # 2 000 devices take 10 s); over one TCP connection nothing is lost.
            self._subscribe(topics, timeout_s, qos=0)
            self.client.publish(sentinel, b"", qos=1)
            if not done.wait(timeout_s):
                raise BrokerUnavailableError("the broker did not finish sending retained messages")
        finally:
            self._handlers.remove(collect)
            self.client.unsubscribe([sentinel, *topics])
        return found

    def list_devices(self, group: str | None = None, timeout_s: float = 5.0) -> list[DeviceInfo]:
        leaves = ("status", "state", "telemetry")
        messages = self.retained([f"{self.prefix}/+/{leaf}" for leaf in leaves], timeout_s)
        infos = summarise(self.prefix, messages, time.time()).values()
        return [i for i in infos if group is None or i.group == group]

    # --- commands ---------------------------------------------------------------------------

    def send(
        self,
        to: Addressee,
        command: str,
        args: Mapping[str, Any] | None = None,
        *,
        wait_s: float = 5.0,
        expected: list[str] | None = None,
    ) -> SendReport:
        """Send ``command`` and collect answers until every expected device answered
        or ``wait_s`` passed. ``expected`` defaults to the online devices addressed
        (from the retained status), or the one device named."""
        if expected is None:
            if to.device is not None:
                expected = [to.device]
            else:
                expected = [d.id for d in self.list_devices() if d.online and to.covers(d)]
        request_id = uuid.uuid4().hex
        report = SendReport(request_id, sorted(expected))
        v5 = self.config.protocol == "5"
        # MQTT 5: devices answer on <reply>/<their id>; 3.1.1: on <p>/<their id>/cmd_result.
        # Either way the ACL lets a device write only the topic named by its own login.
        response = reply_topic(self.prefix, self.client_id)
        answers_base = response if v5 else f"{self.prefix}/+/cmd_result"
        answers_filter = f"{response}/+" if v5 else answers_base
        arrived = threading.Condition()

        def collect(message: mqtt.MQTTMessage) -> None:
            sender = answerer_of(answers_base, message.topic)
            if sender is None:
                return
            if v5:
                correlation = getattr(message.properties, "CorrelationData", None)
                if correlation is not None and correlation != request_id.encode():
                    return
            try:
                answer = json.loads(message.payload)
            except ValueError:
                return
            if not isinstance(answer, dict) or answer.get("id") != request_id:
                return
            claimed = answer.get("device")
            with arrived:
                if claimed != sender:
                    report.impostors.setdefault(sender, []).append(str(claimed))
                    _LOGGER.warning(
                        "dropped an answer on %s that claims to come from %r: only %r may write there",
                        message.topic, claimed, sender,
                    )
                    return
                report.answers[sender] = answer
                arrived.notify_all()

        self._handlers.append(collect)
        started = time.monotonic()
        try:
            # QoS 0 for the same reason: 2 000 answers at once must not queue behind the
            # broker's in-flight window (an answer lost with the connection is reported
            # as no answer).
            self._subscribe([answers_filter], wait_s, qos=0)
            props = None
            if v5:
                props = new_properties(PacketTypes.PUBLISH)
                props.ResponseTopic = response
                props.CorrelationData = request_id.encode()
            payload = json.dumps({"id": request_id, **(args or {})}).encode()
            self.client.publish(to.topic(self.prefix, command), payload, qos=1, properties=props)
            with arrived:
                arrived.wait_for(
                    lambda: set(report.expected) <= set(report.answers),
                    max(0.0, wait_s - (time.monotonic() - started)),
                )
        finally:
            self._handlers.remove(collect)
            self.client.unsubscribe(answers_filter)
        report.elapsed_s = time.monotonic() - started
        return report
