"""Events: the device's public face, on one bus.

Names follow the realtime-voice convention (see ``docs/events.md``). MQTT, logs,
LEDs, metrics and ``edgevoice run --events`` subscribe to the bus. Every event is
JSON-serialisable and carries ``ts`` (wall clock, seconds since the epoch) and,
where the audio clock applies, ``audio_s`` (seconds on the duplex loop's clock).

Each event type's string is defined once, by the layer that produces it: the hearing
events are typed dataclasses in :mod:`edgevoice.audio.hearing` (each knows its
``type`` and ``as_dict()``, and :meth:`EventBus.announce` publishes one as it is), the
duplex loop's in :mod:`edgevoice.audio.io.duplex`, the button's in
:mod:`edgevoice.device.hardware.gpio`; :class:`EventType` names them all.

Only the event-loop thread touches the bus; other threads (the audio loop,
gpiozero callbacks, paho) hand events over with :meth:`EventBus.publish_threadsafe`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from edgevoice.audio.hearing.endpoint import SpeechStarted
from edgevoice.audio.hearing.events import (
    FinalTranscript,
    PartialTranscript,
    SpeechStopped,
    TurnDiscarded,
    WakeWordDetected,
)
from edgevoice.audio.io import duplex
from edgevoice.device.hardware.gpio import ButtonEvent

_LOGGER = logging.getLogger(__name__)


class EventType(StrEnum):
    SESSION_READY = "session.ready"
    SESSION_RESET = "session.reset"
    SPEECH_STARTED = SpeechStarted.type
    SPEECH_STOPPED = SpeechStopped.type
    WAKE_WORD = WakeWordDetected.type
    TRANSCRIPT_USER_DELTA = PartialTranscript.type
    TRANSCRIPT_USER = FinalTranscript.type
    TURN_DISCARDED = TurnDiscarded.type
    REPLY_REQUESTED = "reply.requested"
    REPLY_STARTED = "reply.started"
    TRANSCRIPT_AGENT = "transcript.agent"
    REPLY_DONE = "reply.done"
    BARGE_IN = "barge_in"
    BARGE_IN_MODE = "barge_in.mode"
    STATE_CHANGED = "state.changed"
    BUTTON_PRESSED = ButtonEvent.PRESSED.value
    BUTTON_RELEASED = ButtonEvent.RELEASED.value
    BUTTON_HELD = ButtonEvent.HELD.value
    BUTTON_DOUBLE_PRESSED = ButtonEvent.DOUBLE_PRESSED.value
    MIC_MUTED = "mic.muted"
    VOLUME_CHANGED = "volume.changed"
    ERROR = "error"
    METRICS_TURN = "metrics.turn"
    AUDIO_DEVICE_LOST = duplex.EVENT_DEVICE_LOST
    AUDIO_DEVICE_RESTORED = duplex.EVENT_DEVICE_RESTORED
    AUDIO_XRUN = duplex.EVENT_XRUN
    AUDIO_QUEUE_DROPPED = duplex.EVENT_QUEUE_DROPPED
    AEC_STATUS = "aec.status"
    CONFIG_RELOADED = "config.reloaded"
    MQTT_QUEUE_DROPPED = "mqtt.queue_dropped"
    ESPHOME_CLIENT = "esphome.client"  # a native API client connected, subscribed, left
    PIPELINE_EVENT = "pipeline.event"  # Home Assistant's pipeline, as the satellite hears it
    TIMER = "timer"  # HA's timers on the device: started, updated, cancelled, finished, stopped


# Event types whose payload holds what a person said or heard: personal data.
PERSONAL_EVENTS = frozenset(
    {
        EventType.TRANSCRIPT_USER_DELTA,
        EventType.TRANSCRIPT_USER,
        EventType.TRANSCRIPT_AGENT,
    }
)
# Payload keys that carry speech text in otherwise non-personal events.
PERSONAL_KEYS = frozenset({"text", "heard_text", "interrupted_text", "reply", "transcript"})


class Message(Protocol):
    """A typed event a producing layer defines: its bus ``type`` and its fields."""

    type: ClassVar[str]

    def as_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Event:
    type: str
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        return {"type": str(self.type), "ts": round(self.ts, 6), **self.data}

    def without_personal_data(self) -> Event | None:
        """The event as logs and telemetry may carry it when transcripts are off:
        transcript events are withheld and text fields removed from the rest."""
        if self.type in PERSONAL_EVENTS:
            return None
        if not PERSONAL_KEYS.intersection(self.data):
            return self
        data = {k: v for k, v in self.data.items() if k not in PERSONAL_KEYS}
        return Event(self.type, data, self.ts)


Subscriber = Callable[[Event], None]


class EventBus:
    """Synchronous fan-out on the event-loop thread. A subscriber that raises is
    logged and kept; it never stops the others or the publisher."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Name the loop that owns the bus (for :meth:`publish_threadsafe`)."""
        self._loop = loop

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def publish(self, event: Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                _LOGGER.exception("event subscriber %r failed on %s", subscriber, event.type)

    def announce(self, message: Message) -> Event:
        """Publish a typed event as it is: its own ``type`` and ``as_dict()``."""
        event = Event(message.type, message.as_dict())
        self.publish(event)
        return event

    def emit(self, type_: str, **data: Any) -> Event:
        event = Event(type_, data)
        self.publish(event)
        return event

    def publish_threadsafe(self, event: Event) -> None:
        """From any thread: deliver on the owning loop (dropped if the loop is closed)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("EventBus.bind(loop) must be called before publish_threadsafe")
        try:
            loop.call_soon_threadsafe(self.publish, event)
        except RuntimeError:
            _LOGGER.debug("event %s dropped: loop closed", event.type)
