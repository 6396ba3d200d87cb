"""The device's MQTT bridge: status and last will, state, telemetry, events out;
commands in.

The runtime builds one :class:`MqttBridge` when ``[mqtt] url`` is set, ``await
bridge.start()`` on its event loop and ``await bridge.stop()`` on shutdown. Nothing
here waits on the network from the event loop: paho's thread does the I/O,
incoming commands are handed to the loop with ``call_soon_threadsafe``, the system
statistics are read in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes

from edgevoice import __version__
from edgevoice.device.config.schema import ArbitrationConfig, DeviceConfig, MqttConfig
from edgevoice.device.control import DeviceControl
from edgevoice.device.events import Event, EventBus, EventType
from edgevoice.device.mqtt import announce_cmd as _announce_cmd  # noqa: F401 - registers announce, listen
from edgevoice.device.mqtt import remote as _remote  # noqa: F401 - registers doctor, aec_selftest, logs
from edgevoice.device.mqtt.arbitration import WakeArbiter, room_topic
from edgevoice.device.mqtt.commands import COMMAND_ARGS, Answer, CommandRouter
from edgevoice.device.mqtt.connection import MqttConfigError, MqttConnection, Outgoing, new_properties
from edgevoice.device.mqtt.discovery import discovery_messages, mute_switch
from edgevoice.device.mqtt.discovery_rooms import rooms_discovery_messages
from edgevoice.device.mqtt.telemetry import TelemetrySource, build_telemetry, read_source
from edgevoice.device.mqtt.topics import Topics, answer_topic
from edgevoice.device.system.sysinfo import SystemSampler

_LOGGER = logging.getLogger(__name__)

# Events after which the retained state is refreshed.
STATE_EVENTS = frozenset(
    {
        EventType.STATE_CHANGED,
        EventType.MIC_MUTED,
        EventType.VOLUME_CHANGED,
        EventType.CONFIG_RELOADED,
        EventType.SESSION_READY,
        EventType.SESSION_RESET,
        "timer.changed",  # edgevoice.device.timers.service.TIMER_EVENT
    }
)
# Commands after which the retained state is refreshed.
STATE_COMMANDS = frozenset(
    {"say", "interrupt", "reset_session", "set_volume", "mute", "set_config", "reload",
     "announce", "listen"}
)


def _json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":")).encode()


class MqttBridge:
    """Status, state, telemetry and events out; fleet commands in."""

    def __init__(  # noqa: PLR0917 - the runtime's call, as agreed
        self,
        config: MqttConfig,
        device: DeviceConfig,
        device_id: str,
        bus: EventBus,
        target: DeviceControl,
        telemetry: TelemetrySource | None = None,
        *,
        sampler_factory: Callable[[], SystemSampler] = SystemSampler,
        clock: Callable[[], float] = time.monotonic,
        arbitration: ArbitrationConfig | None = None,
    ) -> None:
        if not config.url:
            raise MqttConfigError("mqtt.url is empty: set it to mqtt://host:1883 to use MQTT")
        self.config = config
        self.device = device
        self.device_id = device_id
        self.topics = Topics(config.topic_prefix, device_id, device.group)
        self._bus = bus
        self._target = target
        self._source = telemetry
        self._sampler_factory = sampler_factory
        self._sampler: SystemSampler | None = None
        self.router = CommandRouter(
            target, device_id=device_id, rate=config.command_rate, burst=config.command_burst,
            clock=clock,
        )
        self._started_at = time.time()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connection: MqttConnection | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._telemetry_task: asyncio.Task[None] | None = None
        self._state_refresh: asyncio.Task[None] | None = None
        self._last_state: dict[str, Any] | None = None
        self._last_state_payload: bytes | None = None
        self._last_turn: dict[str, Any] | None = None
        self._telemetry_seq = 0
        # Wake-word arbitration with the other devices of [device] room (None: not arbitrated).
        self.arbiter: WakeArbiter | None = None
        if device.room and (arbitration is None or arbitration.enabled):
            self.arbiter = WakeArbiter(
                device_id=device_id, topic=room_topic(config.topic_prefix, device.room),
                window_ms=arbitration.window_ms if arbitration is not None else 250,
                publish=self._publish_room,
            )

    # --- lifecycle ---------------------------------------------------------------------

    @property
    def connection(self) -> MqttConnection:
        if self._connection is None:
            raise RuntimeError("MqttBridge.start() has not been called")
        return self._connection

    @property
    def connected(self) -> bool:
        return self._connection is not None and self._connection.connected

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._sampler = await asyncio.to_thread(self._sampler_factory)
        offline = Outgoing(self.topics.status, _json({"state": "offline"}), 1, True)
        self._connection = MqttConnection(
            self.config,
            self.device_id,
            will=offline,
            birth=self._birth,
            subscriptions=[*self.topics.subscriptions(), *([self.arbiter.topic] if self.arbiter else [])],
            on_message=self._on_message_thread,
            on_connected=self._on_connected_thread,
        )
        self._unsubscribe = self._bus.subscribe(self._on_event)
        self._connection.start()
        if self.arbiter is not None:
            self.arbiter.start()
        self._telemetry_task = asyncio.create_task(self._telemetry_loop(), name="mqtt-telemetry")
        self._schedule_state_refresh()
        _LOGGER.info("MQTT bridge for %s started (broker %s)", self.device_id, self._connection.address.host)

    async def stop(self) -> None:
        if self.arbiter is not None:
            await self.arbiter.stop()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        tasks = [t for t in (self._telemetry_task, self._state_refresh, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        if self._connection is not None:
            offline = Outgoing(self.topics.status, _json({"state": "offline"}), 1, True)
            await asyncio.to_thread(self._connection.stop, [offline])
            self._connection = None

    # --- what is published on connect (paho's thread) -------------------------------

    def status_online(self) -> dict[str, Any]:
        return {
            "state": "online",
            "version": __version__,
            "started_at": round(self._started_at, 3),
            "capabilities": sorted(COMMAND_ARGS),
            "group": self.device.group,
            "name": self.device.name,
            "protocol": self.config.protocol,
        }

    def _birth(self) -> list[Outgoing]:
        messages = [Outgoing(self.topics.status, _json(self.status_online()), 1, True)]
        if self.config.homeassistant_discovery:
            base = discovery_messages(
                self.topics, discovery_prefix=self.config.discovery_prefix, name=self.device.name
            )
            extra = rooms_discovery_messages(self.topics, base, discovery_prefix=self.config.discovery_prefix)
            for topic, payload in [*base, *extra]:
                messages.append(Outgoing(topic, _json(payload), 1, True))
        return messages

    def _on_connected_thread(self, dropped: int) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._after_connect, dropped)
        except RuntimeError:
            _LOGGER.debug("MQTT connected after the loop closed")

    def _after_connect(self, dropped: int) -> None:
        if dropped:
            self._bus.emit(
                EventType.MQTT_QUEUE_DROPPED,
                dropped=dropped,
                dropped_total=self.connection.dropped_total,
                queue_size=self.config.queue_size,
            )
        # The broker may have lost the retained state (a restart without persistence).
        self._last_state_payload = None
        if self.arbiter is not None:
            self.arbiter.connected()
        self._schedule_state_refresh()

    # --- events out ---------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        if event.type == EventType.METRICS_TURN:
            self._last_turn = dict(event.data)
        if event.type in STATE_EVENTS:
            self._schedule_state_refresh()
        if event.type == EventType.MIC_MUTED and self.config.homeassistant_discovery and self._connection:
            topic, payload = mute_switch(self.topics, discovery_prefix=self.config.discovery_prefix,
                                         name=self.device.name, mic_muted=bool(event.data.get("muted")))
            self._connection.publish(Outgoing(topic, _json(payload), 1, True))
        published: Event | None = event if self.config.publish_transcripts else event.without_personal_data()
        if published is None or self._connection is None:
            return
        self._connection.publish(Outgoing(self.topics.event, _json(published.as_dict()), 1, False))

    # --- state --------------------------------------------------------------------------

    def _schedule_state_refresh(self) -> None:
        if self._state_refresh is not None and not self._state_refresh.done():
            return
        self._state_refresh = asyncio.create_task(self._refresh_state(), name="mqtt-state")

    async def _refresh_state(self) -> None:
        try:
            state = await self._target.state()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            _LOGGER.warning("reading the device state for MQTT failed: %s", err)
            return
        if state == self._last_state and self._last_state_payload is not None:
            return
        self._last_state = dict(state)
        payload = _json({**state, "ts": round(time.time(), 3)})
        self._last_state_payload = payload
        if self._connection is not None:
            self._connection.publish(Outgoing(self.topics.state, payload, 1, True))

    # --- telemetry ------------------------------------------------------------------------

    async def _telemetry_loop(self) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            try:
                await self.publish_telemetry()
            except asyncio.CancelledError:
                raise
            except Exception:
                _LOGGER.exception("MQTT telemetry failed")
            self._schedule_state_refresh()
            interval = self.config.telemetry_interval_s  # read each time: it applies on reload
            next_at += interval
            now = loop.time()
            if next_at < now:  # fell behind (a suspended board): skip, don't burst
                next_at = now + interval
            await asyncio.sleep(next_at - now)

    async def publish_telemetry(self) -> dict[str, Any]:
        system = await asyncio.to_thread(self._sampler.sample) if self._sampler is not None else None
        conn = self._connection
        self._telemetry_seq += 1
        message = build_telemetry(
            device_id=self.device_id,
            seq=self._telemetry_seq,
            ts=time.time(),
            system=system,
            runtime=read_source(self._source),
            last_turn=self._last_turn,
            mqtt={
                "connected": conn.connected if conn else False,
                "queued": conn.queued if conn else 0,
                "dropped_total": conn.dropped_total if conn else 0,
                "connects": conn.connects if conn else 0,
                "commands_handled": self.router.handled,
                "commands_rejected": dict(self.router.rejected),
            },
        )
        if conn is not None:
            conn.publish(Outgoing(self.topics.telemetry, _json(message), 0, True))
        return message

    # --- commands in ------------------------------------------------------------------

    def _publish_room(self, payload: bytes) -> bool:
        """A room message, now or never (QoS 0, not queued while offline)."""
        if self._connection is None or not self._connection.connected or self.arbiter is None:
            return False
        self._connection.publish(Outgoing(self.arbiter.topic, payload, 0, False))
        return True

    def _on_message_thread(self, message: mqtt.MQTTMessage) -> None:
        if self.arbiter is not None and message.topic == self.arbiter.topic and self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self.arbiter.on_message, bytes(message.payload))
            except RuntimeError:
                _LOGGER.debug("room message dropped: loop closed")
            return
        name = self.topics.command_name(message.topic)
        if name is None or self._loop is None:
            return
        response_topic: str | None = None
        correlation: bytes | None = None
        props = message.properties
        if props is not None:
            response_topic = getattr(props, "ResponseTopic", None)
            correlation = getattr(props, "CorrelationData", None)
        payload = bytes(message.payload)
        try:
            self._loop.call_soon_threadsafe(self._dispatch, name, payload, response_topic, correlation)
        except RuntimeError:
            _LOGGER.debug("command %s dropped: loop closed", name)

    def _dispatch(self, name: str, payload: bytes, response_topic: str | None,
                  correlation: bytes | None) -> None:
        task = asyncio.create_task(self._run_command(name, payload, response_topic, correlation))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_command(self, name: str, payload: bytes, response_topic: str | None,
                           correlation: bytes | None) -> None:
        answer = await self.router.handle(name, payload)
        self._answer(answer, response_topic, correlation)
        if answer.ok and name in STATE_COMMANDS:
            self._schedule_state_refresh()

    def _answer(self, answer: Answer, response_topic: str | None, correlation: bytes | None) -> None:
        if self._connection is None:
            return
        body = _json(answer.as_dict(self.device_id))
        if response_topic and self.config.protocol == "5":
            props = new_properties(PacketTypes.PUBLISH)
            if correlation is not None:
                props.CorrelationData = correlation
            # One level below the response topic, named by this device: the only reply
            # topic the ACL lets it write, so the requester knows who answered.
            topic = answer_topic(response_topic, self.device_id)
            self._connection.publish(Outgoing(topic, body, 1, False, props))
        else:
            self._connection.publish(Outgoing(self.topics.cmd_result, body, 1, False))
