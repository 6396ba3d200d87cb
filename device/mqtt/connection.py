"""One paho-mqtt client: URL, TLS, protocol, last will, capped reconnect backoff and
a bounded offline queue.

paho's own network thread does all socket I/O, so :meth:`MqttConnection.publish`
never blocks its caller (the event loop or the audio path): while connected it hands
the message to paho; while not, the message waits in a bounded queue, the oldest
dropped first and counted. On (re)connect, once the broker has acknowledged the
command subscriptions, the retained ``online`` status goes out and the queue is flushed
in order after it, and the number of dropped messages is reported once
(``on_connected`` receives it). Callbacks given to this class run on paho's thread:
hand over to the event loop with ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import logging
import socket
import ssl
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from edgevoice.device.config.schema import MqttConfig
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)


PAHO_QUEUE_MARGIN = 256


class MqttConfigError(EdgeVoiceError, ValueError):
    code = "mqtt_config_invalid"


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    host: str
    port: int
    tls: bool


def parse_url(url: str) -> BrokerAddress:
    """``mqtt://host[:1883]`` or ``mqtts://host[:8883]``."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("mqtt", "mqtts", "tcp", "ssl") or not parts.hostname:
        raise MqttConfigError(
            f"mqtt.url {url!r} is not a broker URL; use mqtt://host:1883 or mqtts://host:8883"
        )
    tls = scheme in ("mqtts", "ssl")
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError as err:
        raise MqttConfigError(f"mqtt.url {url!r} has an invalid port") from err
    return BrokerAddress(parts.hostname, port, tls)


@dataclass(frozen=True, slots=True)
class Outgoing:
    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = False
    properties: Properties | None = None


def make_client(config: MqttConfig, client_id: str) -> tuple[mqtt.Client, BrokerAddress]:
    """A configured paho client (not yet connected)."""
    address = parse_url(config.url)
    protocol = mqtt.MQTTv5 if config.protocol == "5" else mqtt.MQTTv311
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=client_id,
        protocol=protocol,
        # v3.1.1: a clean session; v5: clean start, the default session expiry of 0.
        clean_session=True if protocol == mqtt.MQTTv311 else None,
    )
    if config.username:
        client.username_pw_set(config.username, config.password or None)
    if address.tls or config.ca_file or config.cert_file:
        try:
            client.tls_set(
                ca_certs=config.ca_file or None,
                certfile=config.cert_file or None,
                keyfile=config.key_file or None,
                cert_reqs=ssl.CERT_REQUIRED,
            )
        except (OSError, ssl.SSLError, ValueError) as err:
            raise MqttConfigError(
                f"cannot load the MQTT TLS files (ca_file/cert_file/key_file): {err}"
            ) from err
        if config.tls_insecure:
            client.tls_insecure_set(True)
    client.reconnect_delay_set(config.reconnect_min_s, config.reconnect_max_s)  # type: ignore[arg-type]
    return client, address


def set_nodelay(client: mqtt.Client) -> None:
    """Small MQTT packets must not wait for Nagle + delayed ACK (~40 ms a round trip):
    a command's PUBACK followed by its answer would otherwise stall. paho leaves it on."""
    sock = client.socket()
    setsockopt = getattr(sock, "setsockopt", None)  # None for websockets
    if setsockopt is None:
        return
    try:
        setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (OSError, AttributeError):
        pass


def new_properties(packet_type: int) -> Properties:
    """MQTT 5 properties for a packet (paho's constructor is untyped)."""
    props: Properties = Properties(packet_type)  # type: ignore[no-untyped-call]
    return props


def connect_properties(protocol: str) -> Properties | None:
    if protocol != "5":
        return None
    props = new_properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 0
    return props


class MqttConnection:
    """A paho client that keeps itself connected; thread-safe :meth:`publish`."""

    def __init__(
        self,
        config: MqttConfig,
        client_id: str,
        *,
        will: Outgoing | None = None,
        birth: Callable[[], Sequence[Outgoing]] = tuple,
        subscriptions: Sequence[str] = (),
        on_message: Callable[[mqtt.MQTTMessage], None] | None = None,
        on_connected: Callable[[int], None] | None = None,
        queue_size: int | None = None,
    ) -> None:
        self.config = config
        self.client, self.address = make_client(config, client_id)
        self._birth = birth
        self._subscriptions = list(subscriptions)
        self._on_message = on_message
        self._on_connected = on_connected
        self._lock = threading.Lock()
        self._queue: deque[Outgoing] = deque()
        self._queue_size = queue_size or config.queue_size
        self._connected = False
        self._dropped_unreported = 0
        self.dropped_total = 0
        self.connects = 0
        self.last_error = ""
        # paho's own queue holds what is in flight (sent, not yet acknowledged) plus the
        # offline queue while it is flushed; its bound only guards against a broker that
        # stops acknowledging.
        self.client.max_queued_messages_set(self._queue_size + PAHO_QUEUE_MARGIN)
        self._stopping = False
        if will is not None:
            self.client.will_set(will.topic, will.payload, will.qos, will.retain)
        self.client.on_connect = self._handle_connect
        self.client.on_disconnect = self._handle_disconnect
        self.client.on_message = self._handle_message
        self.client.on_connect_fail = self._handle_connect_fail
        self.client.on_subscribe = self._handle_subscribe
        self._subscribe_mid: int | None = None

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Connect in the background; paho's thread retries with capped backoff."""
        self.client.connect_async(
            self.address.host,
            self.address.port,
            keepalive=self.config.keepalive,
            clean_start=True if self.config.protocol == "5" else mqtt.MQTT_CLEAN_START_FIRST_ONLY,
            properties=connect_properties(self.config.protocol),
        )
        self.client.loop_start()

    def stop(self, farewell: Sequence[Outgoing] = (), timeout_s: float = 2.0) -> None:
        """Publish ``farewell`` (if connected), disconnect cleanly, stop the thread.

        Blocks up to ``timeout_s``: call it from a worker thread on shutdown.
        """
        if self.connected:
            infos = [self._send(msg) for msg in farewell]
            for info in infos:
                if info is not None and info.rc == MQTTErrorCode.MQTT_ERR_SUCCESS:
                    try:
                        info.wait_for_publish(timeout_s)
                    except (RuntimeError, ValueError):
                        break
        self._stopping = True
        self.client.disconnect()
        self.client.loop_stop()

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def queued(self) -> int:
        return len(self._queue)

    # --- publishing -------------------------------------------------------------------

    def publish(self, message: Outgoing) -> None:
        """From any thread; never blocks on the network."""
        with self._lock:
            if self._connected:
                self._send_counted(message)
                return
            if len(self._queue) >= self._queue_size:
                self._queue.popleft()
                self._count_drop()
            self._queue.append(message)

    def _count_drop(self) -> None:
        self.dropped_total += 1
        self._dropped_unreported += 1

    def _send_counted(self, message: Outgoing) -> None:
        info = self._send(message)
        if info is not None and info.rc == MQTTErrorCode.MQTT_ERR_QUEUE_SIZE:
            self._count_drop()

    def _send(self, message: Outgoing) -> mqtt.MQTTMessageInfo | None:
        try:
            return self.client.publish(
                message.topic, message.payload, message.qos, message.retain, message.properties
            )
        except (ValueError, RuntimeError) as err:
            _LOGGER.warning("MQTT publish to %s refused: %s", message.topic, err)
            return None

    # --- paho callbacks (paho's thread) -------------------------------------------

    def _handle_connect(
        self,
        client: mqtt.Client,
        userdata: object,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if reason.is_failure:
            self.last_error = str(reason)
            _LOGGER.warning("MQTT broker %s refused the connection: %s", self.address.host, reason)
            return
        self.connects += 1
        self.last_error = ""
        set_nodelay(client)
        if self._subscriptions:
            # "Connected" (and the birth message that tells the fleet so) waits for the
            # SUBACK: a command sent the moment the device says it is online must arrive.
            _, self._subscribe_mid = client.subscribe([(topic, 1) for topic in self._subscriptions])
            return
        self._become_ready()

    def _handle_subscribe(
        self,
        client: mqtt.Client,
        userdata: object,
        mid: int,
        reason_codes: list[ReasonCode],
        properties: Properties | None,
    ) -> None:
        if mid != self._subscribe_mid:
            return
        refused = [topic for topic, code in zip(self._subscriptions, reason_codes, strict=False)
                   if code.is_failure]
        if refused:
            _LOGGER.warning(
                "MQTT broker %s refused the subscription(s) %s: check the broker's ACL for this "
                "device's user; commands on those topics will not arrive",
                self.address.host, ", ".join(refused),
            )
        self._become_ready()

    def _become_ready(self) -> None:
        for message in self._birth():
            self._send(message)
        with self._lock:
            while self._queue:
                self._send_counted(self._queue.popleft())
            dropped = self._dropped_unreported
            self._dropped_unreported = 0
            self._connected = True
        _LOGGER.info(
            "MQTT connected to %s:%d%s", self.address.host, self.address.port,
            f" ({dropped} queued message(s) dropped while offline)" if dropped else "",
        )
        if self._on_connected is not None:
            self._on_connected(dropped)

    def _handle_disconnect(
        self,
        client: mqtt.Client,
        userdata: object,
        flags: mqtt.DisconnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        with self._lock:
            was = self._connected
            self._connected = False
        if was and not self._stopping:
            _LOGGER.warning("MQTT connection to %s lost (%s); reconnecting", self.address.host, reason)

    def _handle_connect_fail(self, client: mqtt.Client, userdata: object) -> None:
        # paho calls this from inside its `except OSError` block: the error is current.
        err = sys.exc_info()[1]
        reason = f"{type(err).__name__}: {err}" if err is not None else "connection failed"
        if reason != self.last_error:
            _LOGGER.warning(
                "cannot connect to the MQTT broker %s:%d (%s); retrying every %g-%g s",
                self.address.host, self.address.port, reason,
                self.config.reconnect_min_s, self.config.reconnect_max_s,
            )
        else:
            _LOGGER.debug("MQTT connection attempt failed again: %s", reason)
        self.last_error = reason

    def _handle_message(self, client: mqtt.Client, userdata: object, message: mqtt.MQTTMessage) -> None:
        if self._on_message is not None:
            self._on_message(message)
