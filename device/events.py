"""Events: the device's public face, on one bus.

Names follow the realtime-voice convention (see ``docs/events.md``). MQTT, logs,
LEDs, metrics and ``edgevoice run --events`` subscribe to the bus. Every event is
JSON-serialisable and carries ``ts`` (wall clock, seconds since the epoch) and,
where the audio clock applies, ``audio_s`` (seconds on the duplex loop's clock).

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
from typing import Any

_LOGGER = logging.getLogger(__name__)


class EventType(StrEnum):
    SESSION_READY = "session.ready"
    SESSION_RESET = "session.reset"
    SPEECH_STARTED = "input.speech.started"
    SPEECH_STOPPED = "input.speech.stopped"
    WAKE_WORD = "input.wake_word"
    TRANSCRIPT_USER_DELTA = "transcript.user.delta"
    TRANSCRIPT_USER = "transcript.user"
    TURN_DISCARDED = "input.turn.discarded"
    REPLY_REQUESTED = "reply.requested"
    REPLY_STARTED = "reply.started"
    TRANSCRIPT_AGENT = "transcript.agent"
    REPLY_DONE = "reply.done"
    BARGE_IN = "barge_in"
    BARGE_IN_MODE = "barge_in.mode"
    STATE_CHANGED = "state.changed"
    BUTTON_PRESSED = "button.pressed"
    BUTTON_RELEASED = "button.released"
    BUTTON_HELD = "button.held"
    BUTTON_DOUBLE_PRESSED = "button.double_pressed"
    MIC_MUTED = "mic.muted"
    VOLUME_CHANGED = "volume.changed"
    ERROR = "error"
    METRICS_TURN = "metrics.turn"
    AUDIO_DEVICE_LOST = "audio.device_lost"
    AUDIO_DEVICE_RESTORED = "audio.device_restored"
    AUDIO_XRUN = "audio.xrun"
    AUDIO_QUEUE_DROPPED = "audio.queue_dropped"
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
