"""The GPIO push button and the status LED, through gpiozero with an injected pin factory.

gpiozero calls back from its own threads; every callback here is handed to the
event loop with ``loop.call_soon_threadsafe`` so the runtime only ever sees
button events on the loop thread. On a board with no GPIO (or no gpiozero
backend) :func:`open_gpio` logs one clear line and returns ``None``; the daemon
runs without button and LEDs.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

_LOGGER = logging.getLogger(__name__)


class ButtonEvent(StrEnum):
    PRESSED = "button.pressed"
    RELEASED = "button.released"
    HELD = "button.held"  # held for the reset time
    DOUBLE_PRESSED = "button.double_pressed"


@dataclass(frozen=True, slots=True)
class ButtonSettings:
    pin: int
    pull_up: bool = True
    bounce_ms: int = 30
    reset_hold_s: float = 4.0
    double_press_ms: int = 400


class PressTracker:
    """Pure: tells a double press from two single presses. Times in seconds.

    A first press acts at once (an interruption must not wait to see whether a
    second press follows); a second press within ``window_s`` of the first one's
    release is reported as a double press as well.
    """

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._last_release: float | None = None

    def press(self, at_s: float) -> bool:
        double = self._last_release is not None and at_s - self._last_release <= self.window_s
        if double:
            self._last_release = None
        return double

    def release(self, at_s: float, *, was_double: bool) -> None:
        self._last_release = None if was_double else at_s


class PushButton:
    """A gpiozero ``Button`` whose events arrive on the event loop."""

    def __init__(
        self,
        settings: ButtonSettings,
        on_event: Callable[[ButtonEvent, dict[str, Any]], None],
        loop: asyncio.AbstractEventLoop,
        pin_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        from gpiozero import Button

        self._loop = loop
        self._on_event = on_event
        self._clock = clock
        self._tracker = PressTracker(settings.double_press_ms / 1000.0)
        self._pressed_at = 0.0
        self._double = False
        self._button = Button(
            settings.pin,
            pull_up=settings.pull_up,
            bounce_time=settings.bounce_ms / 1000.0 if settings.bounce_ms > 0 else None,
            hold_time=settings.reset_hold_s,
            pin_factory=pin_factory,
        )
        self._button.when_pressed = self._pressed
        self._button.when_released = self._released
        self._button.when_held = self._held

    def _emit(self, event: ButtonEvent, **data: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(self._on_event, event, data)
        except RuntimeError:
            _LOGGER.debug("button event %s after the loop closed", event)

    def _pressed(self) -> None:
        now = self._clock()
        self._pressed_at = now
        self._double = self._tracker.press(now)
        self._emit(ButtonEvent.PRESSED)
        if self._double:
            self._emit(ButtonEvent.DOUBLE_PRESSED)

    def _released(self) -> None:
        now = self._clock()
        self._tracker.release(now, was_double=self._double)
        self._emit(ButtonEvent.RELEASED, held_s=round(now - self._pressed_at, 3))

    def _held(self) -> None:
        self._emit(ButtonEvent.HELD, held_s=round(self._clock() - self._pressed_at, 3))

    def close(self) -> None:
        self._button.close()


class LedPattern(StrEnum):
    OFF = "off"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"
    MUTED = "muted"
    ERROR = "error"


class StatusLed:
    """A PWM LED showing the device's state: steady on while listening, breathing
    while thinking, a quick flicker while speaking, dim while muted, fast blinks
    on an error, off when idle."""

    def __init__(self, pin: int, brightness: float = 1.0, pin_factory: Any = None) -> None:
        from gpiozero import PWMLED

        self._led = PWMLED(pin, pin_factory=pin_factory)
        self._brightness = max(0.0, min(1.0, brightness))
        self.pattern = LedPattern.OFF

    def show(self, pattern: LedPattern) -> None:
        led, level = self._led, self._brightness
        self.pattern = pattern
        if pattern is LedPattern.OFF:
            led.off()
        elif pattern is LedPattern.LISTENING:
            led.value = level
        elif pattern is LedPattern.THINKING:
            led.pulse(fade_in_time=0.4, fade_out_time=0.4)
        elif pattern is LedPattern.SPEAKING:
            led.blink(on_time=0.12, off_time=0.08)
        elif pattern is LedPattern.MUTED:
            led.value = 0.05 * level
        elif pattern is LedPattern.ERROR:
            led.blink(on_time=0.05, off_time=0.05, n=10)

    def close(self) -> None:
        self._led.close()


def open_gpio(
    button: ButtonSettings | None,
    led_pin: int | None,
    on_event: Callable[[ButtonEvent, dict[str, Any]], None],
    loop: asyncio.AbstractEventLoop,
    *,
    led_brightness: float = 1.0,
    pin_factory: Any = None,
) -> tuple[PushButton | None, StatusLed | None] | None:
    """Open the button and LED, or return None (one log line) where there is no GPIO."""
    if button is None and led_pin is None:
        return None
    try:
        import gpiozero
    except ImportError:
        _LOGGER.warning("GPIO disabled: gpiozero is not installed (pip install 'edgevoice[pi]')")
        return None
    try:
        # gpiozero warns once per backend it falls back from; one line of ours says it all.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gpiozero.PinFactoryFallback)
            push = PushButton(button, on_event, loop, pin_factory) if button is not None else None
            led = StatusLed(led_pin, led_brightness, pin_factory) if led_pin is not None else None
    except Exception as err:  # gpiozero raises BadPinFactory, PinInvalidPin, OSError...
        _LOGGER.warning(
            "GPIO disabled: no usable GPIO on this board (%s: %s); button and LED are off",
            type(err).__name__,
            err,
        )
        return None
    return push, led
