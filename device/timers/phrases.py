"""What people say to timers, and what the device says back (pure).

"set a timer for five minutes", "set a pasta timer for 10 minutes", "start a timer called
tea for two and a half minutes", "how long is left", "how much time is left on the pasta
timer", "cancel the timer", "cancel the pasta timer"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from edgevoice.device.timers.model import Timer


class TimerAction(StrEnum):
    SET = "set"
    LEFT = "left"
    CANCEL = "cancel"


@dataclass(frozen=True, slots=True)
class TimerRequest:
    action: TimerAction
    name: str | None = None  # None: not said
    seconds: float | None = None


_UNITS = {"second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "hr": 3600}
_ONES = {"zero": 0, "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
         "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
         "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
         "couple": 2, "few": 3}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_TENS_RE = "|".join(_TENS)
_ONES_RE = "|".join(k for k in _ONES if k not in ("a", "an"))
_NUMBER = rf"(?:\d+(?:\.\d+)?|(?:{_TENS_RE})(?:[ -](?:{_ONES_RE}))?|{'|'.join(_ONES)})"
_UNIT = r"(?:hours?|hrs?|minutes?|mins?|seconds?|secs?)"
_AMOUNT = re.compile(rf"(?P<n>{_NUMBER})(?: and a half)? (?P<u>{_UNIT})(?P<half> and a half)?")
_HALF_HOUR = re.compile(r"\bhalf an? hour\b")
_FILLER = {"a", "an", "the", "my", "new", "one", "another"}


def _number(word: str) -> float:
    word = word.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", word):
        return float(word)
    parts = re.split(r"[ -]", word)
    total = 0
    for part in parts:
        total += _TENS.get(part, 0) + _ONES.get(part, 0)
    return float(total)


def parse_duration(text: str) -> float | None:
    """Seconds in ``text`` ("five minutes", "1 hour and 30 minutes", "half an hour")."""
    total = 0.0
    found = False
    if _HALF_HOUR.search(text):
        total += 1800
        found = True
        text = _HALF_HOUR.sub(" ", text)
    for match in _AMOUNT.finditer(text):
        unit = match.group("u").rstrip("s") if match.group("u") not in ("hrs", "mins", "secs") else \
            match.group("u")[:-1]
        amount = _number(match.group("n"))
        if " and a half" in match.group(0):
            amount += 0.5
        total += amount * _UNITS[unit]
        found = True
    return total if found else None


def _clean(text: str) -> str:
    text = re.sub(r"[^\w\s'.-]", " ", text.lower())
    return re.sub(r"\s+", " ", text).strip()


def _name_before_timer(text: str) -> str | None:
    named = re.search(r"\btimer (?:called|named|for the) (?P<n>[a-z][a-z ]{0,30}?)(?: for\b|$)", text)
    if named and parse_duration(named.group("n")) is None:
        return named.group("n").strip()
    match = re.search(r"\b(?P<pre>(?:[a-z']+ ){0,3})timers?\b", text)
    if not match:
        return None
    words = [w for w in match.group("pre").split() if w not in _FILLER]
    # "set a pasta timer", "cancel the kitchen timer": the words right before "timer"
    words = [w for w in words if w not in {"set", "start", "make", "cancel", "stop", "delete", "remove",
                                           "on", "of", "is", "left", "for", "minute", "minutes",
                                           "second", "seconds", "hour", "hours", "long", "much",
                                           "time", "how"}
             and not re.fullmatch(_NUMBER, w)]
    return " ".join(words[-2:]) or None


def parse_timer_request(text: str) -> TimerRequest | None:
    """The timer request ``text`` makes, or None when it is not about a timer."""
    clean = _clean(text)
    if "timer" not in clean and not re.search(r"\b(how (long|much time) (is )?(left|remaining)|"
                                               r"time (is )?(left|remaining))\b", clean):
        return None
    if re.search(r"\b(cancel|stop|delete|remove|clear|turn off)\b", clean):
        return TimerRequest(TimerAction.CANCEL, _name_before_timer(clean))
    if re.search(r"\b(how (long|much)|left|remaining|status)\b", clean):
        return TimerRequest(TimerAction.LEFT, _name_before_timer(clean))
    seconds = parse_duration(clean)
    if seconds is not None and re.search(r"\b(set|start|make|create|timer for|put)\b|\btimer\b", clean):
        return TimerRequest(TimerAction.SET, _name_before_timer(clean), seconds)
    return None


def spoken_duration(seconds: float) -> str:
    """``3725`` → "1 hour, 2 minutes and 5 seconds"; rounded up to whole seconds."""
    left = int(-(-seconds // 1))
    parts = []
    for unit, size in (("hour", 3600), ("minute", 60), ("second", 1)):
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    if not parts:
        return "0 seconds"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _called(timer: Timer) -> str:
    return "The timer" if timer.name == "timer" else f"The {timer.name} timer"


def describe_set(timer: Timer) -> str:
    label = "A timer" if timer.name == "timer" else f"A {timer.name} timer"
    return f"{label} for {spoken_duration(timer.duration_s)}, starting now."


def describe_left(timers: tuple[Timer, ...], now: float, name: str | None) -> str:
    chosen = tuple(t for t in timers if name is None or t.name == name)
    if not chosen:
        return f"There is no {name} timer." if name else "There are no timers running."
    return " ".join(f"{_called(t)} has {spoken_duration(t.remaining_s(now))} left."
                    if not t.ringing else f"{_called(t)} is ringing." for t in chosen)


def describe_cancelled(gone: tuple[Timer, ...], name: str | None, running: int) -> str:
    if gone:
        what = " and ".join(_called(t).lower().replace("the ", "the ", 1) for t in gone)
        return f"Cancelled {what}."
    if name:
        return f"There is no {name} timer."
    return "Which timer? Say its name." if running > 1 else "There are no timers running."
