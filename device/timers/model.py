"""The timer book: pure, immutable, no clock (``now`` is wall-clock seconds, passed in)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from edgevoice.errors import EdgeVoiceError

MAX_TIMERS = 20
MAX_DURATION_S = 24 * 3600.0
DEFAULT_NAME = "timer"


class TimerError(EdgeVoiceError):
    code = "timer_invalid"


@dataclass(frozen=True, slots=True)
class Timer:
    name: str
    duration_s: float
    ends_at: float  # wall clock (time.time())
    ringing: bool = False

    def remaining_s(self, now: float) -> float:
        return max(0.0, self.ends_at - now)

    def fraction_left(self, now: float) -> float:
        """1.0 just set, 0.0 at its end (clamped: the wall clock may jump either way)."""
        if self.duration_s <= 0:  # only a hand-edited timers file has one
            return 0.0
        return max(0.0, min(1.0, self.remaining_s(now) / self.duration_s))

    def as_dict(self, now: float) -> dict[str, Any]:
        return {"name": self.name, "duration_s": round(self.duration_s, 3), "ends_at": round(self.ends_at, 3),
                "remaining_s": round(self.remaining_s(now), 1), "ringing": self.ringing}


@dataclass(frozen=True, slots=True)
class TimerBook:
    timers: tuple[Timer, ...] = ()

    def get(self, name: str) -> Timer | None:
        return next((t for t in self.timers if t.name == name), None)

    def add(self, name: str, duration_s: float, now: float) -> tuple[TimerBook, Timer]:
        """A new timer (or the same name restarted)."""
        name = (name or DEFAULT_NAME).strip().lower()
        if not 1.0 <= duration_s <= MAX_DURATION_S:
            raise TimerError(f"a timer runs from 1 second to 24 hours, not {duration_s:g} s")
        if not name or len(name) > 40:
            raise TimerError("a timer's name must be 1 to 40 characters")
        others = tuple(t for t in self.timers if t.name != name)
        if len(others) >= MAX_TIMERS:
            raise TimerError(f"{MAX_TIMERS} timers are running already; cancel one first")
        timer = Timer(name, float(duration_s), now + duration_s)
        return TimerBook((*others, timer)), timer

    def cancel(self, name: str | None) -> tuple[TimerBook, tuple[Timer, ...]]:
        """Remove ``name``; None removes the only timer (or every ringing one)."""
        if name is not None:
            gone = tuple(t for t in self.timers if t.name == name)
        elif len(self.timers) == 1:
            gone = self.timers
        else:
            gone = tuple(t for t in self.timers if t.ringing)
        return TimerBook(tuple(t for t in self.timers if t not in gone)), gone

    def due(self, now: float) -> tuple[TimerBook, tuple[Timer, ...]]:
        """Timers whose time has come start ringing (also those that ended while the
        device was off: they ring as soon as it is back)."""
        newly = tuple(t for t in self.timers if not t.ringing and t.ends_at <= now)
        if not newly:
            return self, ()
        timers = tuple(replace(t, ringing=True) if t in newly else t for t in self.timers)
        return TimerBook(timers), tuple(replace(t, ringing=True) for t in newly)

    def stop_ringing(self) -> tuple[TimerBook, tuple[Timer, ...]]:
        rung = tuple(t for t in self.timers if t.ringing)
        return TimerBook(tuple(t for t in self.timers if not t.ringing)), rung

    @property
    def ringing(self) -> bool:
        return any(t.ringing for t in self.timers)

    def next_due(self) -> Timer | None:
        waiting = [t for t in self.timers if not t.ringing]
        return min(waiting, key=lambda t: t.ends_at) if waiting else None

    def countdown(self, now: float) -> float | None:
        """What the LED ring shows: the fraction left of the running timer that ends
        first (ringing ones have their own pattern); None when none runs."""
        nxt = self.next_due()
        return nxt.fraction_left(now) if nxt is not None else None

    def running(self) -> tuple[Timer, ...]:
        return tuple(sorted((t for t in self.timers if not t.ringing), key=lambda t: t.ends_at))

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "timers": [{"name": t.name, "duration_s": t.duration_s, "ends_at": t.ends_at,
                                          "ringing": t.ringing} for t in self.timers]}

    @classmethod
    def from_json(cls, data: Any) -> TimerBook:
        if not isinstance(data, dict) or not isinstance(data.get("timers"), list):
            raise TimerError("the timers file is not a timer book")
        timers = []
        for item in data["timers"]:
            try:
                timers.append(Timer(str(item["name"]), float(item["duration_s"]), float(item["ends_at"]),
                                    bool(item.get("ringing", False))))
            except (KeyError, TypeError, ValueError) as err:
                raise TimerError(f"a timer in the timers file is malformed: {err}") from err
        return cls(tuple(timers))
