"""Home Assistant's timers as the device keeps them: pure, no clock (times are passed in).

HA owns the timers (started by voice, "set a timer for five minutes") and tells the
device with VoiceAssistantTimerEventResponse: started, updated, cancelled, finished.
The device shows the countdown (the LED ring's fraction left) and rings when one
finishes, until "stop" is said or the button is pressed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class TimerEvent(StrEnum):
    STARTED = "started"
    UPDATED = "updated"
    CANCELLED = "cancelled"
    FINISHED = "finished"


# VoiceAssistantTimerEvent's wire values.
TIMER_EVENTS = {0: TimerEvent.STARTED, 1: TimerEvent.UPDATED, 2: TimerEvent.CANCELLED,
                3: TimerEvent.FINISHED}


@dataclass(slots=True)
class Timer:
    timer_id: str
    name: str
    total_s: int
    left_s: int
    active: bool
    at: float  # when ``left_s`` was reported

    def left_at(self, now: float) -> float:
        if not self.active:
            return float(self.left_s)
        return max(0.0, self.left_s - (now - self.at))


@dataclass(slots=True)
class Timers:
    """The timers HA reported, and which of them ring."""

    timers: dict[str, Timer] = field(default_factory=dict)
    ringing: set[str] = field(default_factory=set)

    def update(self, event: TimerEvent, timer: Timer) -> None:
        if event in (TimerEvent.STARTED, TimerEvent.UPDATED):
            self.timers[timer.timer_id] = timer
        elif event is TimerEvent.CANCELLED:
            self.timers.pop(timer.timer_id, None)
            self.ringing.discard(timer.timer_id)
        elif event is TimerEvent.FINISHED:
            self.timers.pop(timer.timer_id, None)
            self.ringing.add(timer.timer_id)

    def stop_ringing(self) -> list[str]:
        stopped, self.ringing = sorted(self.ringing), set()
        return stopped

    @property
    def is_ringing(self) -> bool:
        return bool(self.ringing)

    def fraction_left(self, now: float) -> float | None:
        """The soonest timer's fraction left (1 → 0), for the LED ring; None: no timer."""
        running = [t for t in self.timers.values() if t.total_s > 0]
        if not running:
            return None
        soonest = min(running, key=lambda t: t.left_at(now))
        return min(1.0, soonest.left_at(now) / soonest.total_s)


def is_stop(text: str, phrases: tuple[str, ...]) -> bool:
    """Whether a heard ``text`` asks a ringing timer to stop."""
    words = text.lower().split()
    return any(all(w in words for w in phrase.lower().split()) for phrase in phrases if phrase.strip())


__all__ = ["TIMER_EVENTS", "Timer", "TimerEvent", "Timers", "is_stop"]
