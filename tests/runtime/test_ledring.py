"""The APA102 ring over gpiozero's mock SPI: the bits on the MOSI pin, clocked by the
clock pin, decode to the frame the datasheet describes."""

from __future__ import annotations

import time

from gpiozero.pins.mock import MockFactory
from support.apa102 import Apa102Strip

from edgevoice.device.hardware.gpio import LedPattern
from edgevoice.device.hardware.ledring import BLUE, LedRing, apa102_frame, pattern_colors


def test_frame_layout() -> None:
    frame = apa102_frame([(1, 2, 3), (255, 0, 128)], brightness=7)
    assert frame[:4] == [0, 0, 0, 0]
    assert frame[4:8] == [0b11100111, 3, 2, 1]  # brightness, blue, green, red
    assert frame[8:12] == [0b11100111, 128, 0, 255]
    assert frame[12:] == [0xFF]
    assert len(apa102_frame([(0, 0, 0)] * 40)) == 4 + 160 + 3


def test_patterns() -> None:
    assert pattern_colors(LedPattern.LISTENING, 12, 0) == [BLUE] * 12
    thinking = [pattern_colors(LedPattern.THINKING, 12, step).index(BLUE) for step in range(14)]
    assert thinking == [*range(12), 0, 1]  # a dot running round the ring
    assert pattern_colors(LedPattern.OFF, 3, 5) == [(0, 0, 0)] * 3


def test_the_ring_clocks_out_the_listening_frame(mock_spi_factory: MockFactory) -> None:
    strip = Apa102Strip(mock_spi_factory)
    ring = LedRing(3, brightness=1.0, pin_factory=mock_spi_factory)
    try:
        ring.show(LedPattern.LISTENING)
        expected = apa102_frame([BLUE] * 3, 31)
        deadline = time.monotonic() + 5
        while expected not in strip.frames and time.monotonic() < deadline:
            time.sleep(0.05)
        assert strip.frames[0] == apa102_frame([(0, 0, 0)] * 3, 31)  # off at start
        assert expected in strip.frames
    finally:
        ring.close()
    assert strip.frames[-1] == apa102_frame([(0, 0, 0)] * 3, 31)  # off when closed
    strip.close()


def test_a_timer_countdown_shows_while_idle_and_gives_way_to_listening(mock_spi_factory: MockFactory) -> None:
    from edgevoice.device.hardware.ledring import AMBER, OFF

    strip = Apa102Strip(mock_spi_factory)
    ring = LedRing(4, brightness=1.0, pin_factory=mock_spi_factory)
    try:
        ring.show_countdown(0.5)
        half = apa102_frame([AMBER, AMBER, OFF, OFF], 31)
        listening = apa102_frame([BLUE] * 4, 31)
        deadline = time.monotonic() + 5
        while half not in strip.frames and time.monotonic() < deadline:
            time.sleep(0.05)
        assert half in strip.frames
        ring.show(LedPattern.LISTENING)  # a turn: the state's pattern, not the countdown
        while listening not in strip.frames and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listening in strip.frames
    finally:
        ring.close()
    strip.close()


def test_the_ring_points_at_the_talker() -> None:
    from edgevoice.device.hardware.ledring import direction_colors, pointing_led

    # twelve LEDs, LED 0 at the array's 0 degrees, counter-clockwise: 30 degrees apart
    assert [pointing_led(d, 12) for d in (0.0, 14.9, 15.1, 90.0, 359.0, -30.0)] == [0, 0, 1, 3, 0, 11]
    assert pointing_led(90.0, 12, first_led_deg=30.0) == 2  # LED 0 sits at 30 degrees
    assert pointing_led(10.0, 12, first_led_deg=-350.0) == 0  # offsets wrap like azimuths
    colors = direction_colors(90.0, 12)
    assert colors[3] == BLUE
    assert colors[2] == colors[4] != colors[0]  # the neighbours half-lit, the rest dim
    assert all(c != (0, 0, 0) for c in colors)  # still reads as "listening" all round
    assert sum(sum(c) for c in colors[2:5]) > sum(sum(c) for c in colors[5:])


def test_the_listening_ring_turns_to_the_talker_and_forgets_them_after(mock_spi_factory: MockFactory) -> None:
    from edgevoice.device.hardware.ledring import direction_colors

    strip = Apa102Strip(mock_spi_factory)
    ring = LedRing(6, brightness=1.0, pin_factory=mock_spi_factory, first_led_deg=60.0)
    pointing = apa102_frame(direction_colors(180.0, 6, 60.0), 31)
    plain = apa102_frame([BLUE] * 6, 31)

    def wait_for(frame: list[int]) -> None:
        deadline = time.monotonic() + 5
        while frame not in strip.frames and time.monotonic() < deadline:
            time.sleep(0.05)
        assert frame in strip.frames

    try:
        ring.show(LedPattern.LISTENING)
        wait_for(plain)
        ring.show_direction(180.0)
        wait_for(pointing)
        lit = pointing[4:-1][2 * 4:2 * 4 + 4]  # LED 2 = (180 - 60) / 60
        assert lit == [0b11111111, BLUE[2], BLUE[1], BLUE[0]]
        ring.show(LedPattern.THINKING)
        ring.show(LedPattern.LISTENING)  # the next turn: plain listening until its talker is found
        assert ring.direction_deg is None
        strip.frames.clear()
        wait_for(plain)
    finally:
        ring.close()
    strip.close()
