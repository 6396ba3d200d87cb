"""The LED ring's countdown sources on gpiozero's mock SPI: the device's own timers and
Home Assistant's (ESPHome) each keep their own, HA's goes first, a pattern covers both."""

from __future__ import annotations

import time

from gpiozero.pins.mock import MockFactory
from support.apa102 import Apa102Strip

from edgevoice.device.hardware.gpio import LedPattern
from edgevoice.device.hardware.ledring import (
    CountdownSource,
    LedRing,
    apa102_frame,
    countdown_colors,
    pattern_colors,
)


def _shows(strip: Apa102Strip, colors: list[tuple[int, int, int]], since: int = 0) -> bool:
    frame = apa102_frame(colors, 31)
    deadline = time.monotonic() + 5
    while frame not in strip.frames[since:] and time.monotonic() < deadline:
        time.sleep(0.02)
    return frame in strip.frames[since:]


def test_home_assistants_countdown_goes_first_and_its_end_leaves_the_devices(
        mock_spi_factory: MockFactory) -> None:
    strip = Apa102Strip(mock_spi_factory)
    ring = LedRing(4, brightness=1.0, pin_factory=mock_spi_factory)
    try:
        ring.show_countdown(0.75, CountdownSource.DEVICE)
        assert _shows(strip, countdown_colors(0.75, 4))
        mark = len(strip.frames)
        ring.show_countdown(0.25)  # the ESPHome bridge's call: Home Assistant's timer
        assert _shows(strip, countdown_colors(0.25, 4), mark) and ring.countdown == 0.25
        mark = len(strip.frames)
        ring.show_countdown(0.5, CountdownSource.DEVICE)  # the device's next second: HA's still shown
        ring.show_countdown(0.25)
        time.sleep(0.2)
        assert apa102_frame(countdown_colors(0.5, 4), 31) not in strip.frames[mark:]
        ring.show_countdown(None)  # HA's timer ended: the device's countdown is back
        assert _shows(strip, countdown_colors(0.5, 4), mark) and ring.countdown == 0.5
        mark = len(strip.frames)
        ring.show(LedPattern.ERROR)  # a timer rings: its flashes cover the countdown
        assert _shows(strip, pattern_colors(LedPattern.ERROR, 4, 0), mark)
        ring.show(LedPattern.OFF)
        mark = len(strip.frames)
        assert _shows(strip, countdown_colors(0.5, 4), mark)
        mark = len(strip.frames)
        ring.show_countdown(None, CountdownSource.DEVICE)
        assert _shows(strip, [(0, 0, 0)] * 4, mark) and ring.countdown is None
    finally:
        ring.close()
        strip.close()
