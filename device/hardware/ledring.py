"""The APA102 LED ring of common mic-array HATs (ReSpeaker 4-Mic, 6-Mic), over SPI.

Each frame is 32 zero bits, then per LED ``0b111bbbbb`` (5-bit global brightness) and
blue, green, red bytes, then enough one bits to clock the last LED's data through
(half a bit per LED). The SPI interface comes from the gpiozero pin factory, so
gpiozero's MockFactory drives the same code in tests, bit by bit.

Patterns follow the status LED's: listening solid blue, thinking a blue dot running
round the ring, speaking breathing cyan, muted dim red, error red flashes, off.
With a mic array, the listening ring points at the talker: the LED nearest their direction
bright, its neighbours half, the rest dim blue (:func:`direction_colors`).
While the ring is otherwise off (idle, in every listen mode) a running timer's countdown
shows in amber (:func:`countdown_colors`); any pattern, a ringing timer's red flashes
among them, covers it.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from edgevoice.device.hardware.gpio import LedPattern

_LOGGER = logging.getLogger(__name__)

Color = tuple[int, int, int]  # red, green, blue, 0-255
OFF: Color = (0, 0, 0)
BLUE: Color = (0, 40, 255)
CYAN: Color = (0, 200, 200)
RED: Color = (255, 0, 0)
AMBER: Color = (255, 120, 0)


def countdown_colors(fraction_left: float, count: int) -> list[Color]:
    """A timer's countdown while idle: the fraction left of the ring lit amber, the rest
    dark (the last LED stays lit until the timer finishes)."""
    lit = max(1, math.ceil(max(0.0, min(1.0, fraction_left)) * count)) if fraction_left > 0 else 0
    return [AMBER if i < lit else OFF for i in range(count)]


def pointing_led(direction_deg: float, count: int, first_led_deg: float = 0.0) -> int:
    """The LED nearest ``direction_deg`` (the array's azimuth, counter-clockwise) on a ring
    whose LED 0 sits at ``first_led_deg`` and whose LEDs run counter-clockwise."""
    step = 360.0 / count
    return round(((direction_deg - first_led_deg) % 360.0) / step) % count


def direction_colors(direction_deg: float, count: int, first_led_deg: float = 0.0) -> list[Color]:
    """Listening, pointing at the talker: the nearest LED full blue, its neighbours half,
    the others dim, so the ring still reads as "listening" from across the room."""
    head = pointing_led(direction_deg, count, first_led_deg)
    half: Color = (0, 20, 128)
    dim: Color = (0, 4, 40)
    colors = [dim] * count
    if count > 2:
        colors[(head - 1) % count] = colors[(head + 1) % count] = half
    colors[head] = BLUE
    return colors


def apa102_frame(colors: Sequence[Color], brightness: int = 31) -> list[int]:
    """The bytes that set a strip of APA102 LEDs to ``colors`` (pure)."""
    level = 0b11100000 | max(0, min(31, brightness))
    data = [0, 0, 0, 0]
    for red, green, blue in colors:
        data += [level, blue & 0xFF, green & 0xFF, red & 0xFF]
    data += [0xFF] * max(1, (len(colors) + 15) // 16)
    return data


def pattern_colors(pattern: LedPattern, count: int, step: int) -> list[Color]:
    """The ring's colours for ``pattern`` at animation step ``step`` (20 steps a second)."""
    if pattern is LedPattern.LISTENING:
        return [BLUE] * count
    if pattern is LedPattern.THINKING:
        head = step % count
        return [BLUE if i == head else (0, 0, 40) for i in range(count)]
    if pattern is LedPattern.SPEAKING:
        level = 0.35 + 0.65 * (0.5 + 0.5 * math.sin(step * 2 * math.pi / 20))
        return [tuple(round(c * level) for c in CYAN)] * count  # type: ignore[list-item]
    if pattern is LedPattern.MUTED:
        return [(40, 0, 0)] * count
    if pattern is LedPattern.ERROR:
        return [RED if (step // 3) % 2 == 0 else OFF] * count
    return [OFF] * count


class CountdownSource(StrEnum):
    """Who feeds the ring's countdown. Each keeps its own, so one clearing its countdown
    never blanks the other's."""

    HOME_ASSISTANT = "home_assistant"  # HA's timers over the ESPHome API (device/esphome)
    DEVICE = "device"  # the device's own timers (device/timers)


# Home Assistant's countdown first: while HA is connected its pipeline answers the turns,
# so its timer is the one just asked for; the device's own timers show again once HA's ends.
COUNTDOWN_PRECEDENCE = (CountdownSource.HOME_ASSISTANT, CountdownSource.DEVICE)


class LedRing:
    """An APA102 ring animated by one background thread."""

    FRAME_S = 0.05

    def __init__(self, count: int, brightness: float = 0.5, pin_factory: Any = None,
                 spi: Any = None, first_led_deg: float = 0.0) -> None:
        if spi is None:
            if pin_factory is None:
                from gpiozero import Device

                Device.ensure_pin_factory()
                pin_factory = Device.pin_factory
            spi = pin_factory.spi(port=0, device=0)
        self._spi = spi
        self.count = count
        self._brightness = max(0, min(31, round(brightness * 31)))
        self.pattern = LedPattern.OFF
        self._countdowns: dict[CountdownSource, float] = {}  # fraction left, shown while idle
        self.direction_deg: float | None = None  # the talker, pointed at while listening
        self._first_led_deg = first_led_deg
        self._step = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="edgevoice-ledring", daemon=True)
        self._write(pattern_colors(LedPattern.OFF, count, 0))
        self._thread.start()

    def show(self, pattern: LedPattern) -> None:
        with self._lock:
            if pattern is not LedPattern.LISTENING:
                # The turn is over (or never began): the next one finds its talker anew. Going
                # *to* listening keeps it: the talker's onset can come just before the state.
                self.direction_deg = None
            self.pattern = pattern
            self._step = 0
        self._wake.set()

    def show_direction(self, direction_deg: float | None) -> None:
        """Point at a talker at ``direction_deg`` (array azimuth) while the ring shows
        listening; None goes back to the plain listening ring."""
        with self._lock:
            self.direction_deg = direction_deg
        self._wake.set()

    def show_countdown(self, fraction_left: float | None,
                       source: CountdownSource = CountdownSource.HOME_ASSISTANT) -> None:
        """Show a timer's fraction left while the ring is otherwise off (None: no timer
        of ``source`` runs)."""
        with self._lock:
            if fraction_left is None:
                self._countdowns.pop(source, None)
            else:
                self._countdowns[source] = fraction_left
        self._wake.set()

    @property
    def countdown(self) -> float | None:
        """The fraction left the ring shows while idle (:data:`COUNTDOWN_PRECEDENCE`)."""
        with self._lock:
            return self._shown_countdown()

    def _shown_countdown(self) -> float | None:
        return next((self._countdowns[s] for s in COUNTDOWN_PRECEDENCE if s in self._countdowns), None)

    def _write(self, colors: Sequence[Color]) -> None:
        self._spi.transfer(apa102_frame(colors, self._brightness))

    def _run(self) -> None:
        animated = {LedPattern.THINKING, LedPattern.SPEAKING, LedPattern.ERROR}
        while not self._stop.is_set():
            with self._lock:
                pattern, step, countdown = self.pattern, self._step, self._shown_countdown()
                direction = self.direction_deg
                self._step += 1
            try:
                if pattern is LedPattern.LISTENING and direction is not None:
                    self._write(direction_colors(direction, self.count, self._first_led_deg))
                elif pattern is LedPattern.OFF and countdown is not None:
                    self._write(countdown_colors(countdown, self.count))
                else:
                    self._write(pattern_colors(pattern, self.count, step))
            except Exception as err:  # a vanished SPI device must not kill the daemon
                _LOGGER.warning("LED ring write failed (%s); the ring is off", err)
                return
            self._wake.wait(self.FRAME_S if pattern in animated else None)
            self._wake.clear()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(1.0)
        try:
            self._write([OFF] * self.count)
        finally:
            close = getattr(self._spi, "close", None)
            if close is not None:
                close()
