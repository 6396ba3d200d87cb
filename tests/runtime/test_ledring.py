"""The APA102 ring over gpiozero's mock SPI: the bits on the MOSI pin, clocked by the
clock pin, decode to the frame the datasheet describes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from gpiozero import Device
from gpiozero.pins.mock import MockFactory, MockSPIDevice

from edgevoice.device.hardware.gpio import LedPattern
from edgevoice.device.hardware.ledring import BLUE, LedRing, apa102_frame, pattern_colors


@pytest.fixture
def factory() -> Iterator[MockFactory]:
    mock = MockFactory()
    previous = Device.pin_factory
    Device.pin_factory = mock  # the mock SPI's software pins come from the default factory
    yield mock
    mock.reset()
    Device.pin_factory = previous


class Apa102Strip(MockSPIDevice):
    """The LED side of the bus (gpiozero's own SPI test double): every complete frame
    it is clocked, as bytes."""

    def __init__(self, factory: MockFactory) -> None:
        super().__init__(11, 10, None, 8, pin_factory=factory)
        self.frames: list[list[int]] = []

    def on_select(self) -> None:
        super().on_select()
        if self.select_pin.state and self.rx_buf:  # deselected: a frame is complete
            bits = [int(b) for b in self.rx_buf]
            self.frames.append([int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8)])


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


def test_the_ring_clocks_out_the_listening_frame(factory: MockFactory) -> None:
    strip = Apa102Strip(factory)
    ring = LedRing(3, brightness=1.0, pin_factory=factory)
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


def test_a_timer_countdown_shows_while_idle_and_gives_way_to_listening(factory: MockFactory) -> None:
    from edgevoice.device.hardware.ledring import AMBER, OFF

    strip = Apa102Strip(factory)
    ring = LedRing(4, brightness=1.0, pin_factory=factory)
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
