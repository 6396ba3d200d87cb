"""The button and LED with gpiozero's own MockFactory (no MagicMock)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory, MockPWMPin

from edgevoice.device.hardware.gpio import (
    ButtonEvent,
    ButtonSettings,
    LedPattern,
    PressTracker,
    PushButton,
    StatusLed,
    open_gpio,
)


@pytest.fixture
def factory() -> Iterator[MockFactory]:
    mock = MockFactory(pin_class=MockPWMPin)
    yield mock
    mock.reset()


def test_press_tracker_tells_double_from_single_presses() -> None:
    tracker = PressTracker(0.4)
    assert not tracker.press(0.0)
    tracker.release(0.1, was_double=False)
    assert tracker.press(0.3)  # second press 0.2 s after the release
    tracker.release(0.35, was_double=True)
    assert not tracker.press(0.5)  # a third press starts over
    tracker.release(0.6, was_double=False)
    assert not tracker.press(1.5)  # too late for a double


async def _collect(loop_events: list[tuple[ButtonEvent, dict[str, Any]]], count: int) -> None:
    for _ in range(200):
        if len(loop_events) >= count:
            return
        await asyncio.sleep(0.01)


async def test_press_release_hold_and_double_press_arrive_on_the_loop(factory: MockFactory) -> None:
    loop = asyncio.get_running_loop()
    events: list[tuple[ButtonEvent, dict[str, Any]]] = []
    threads: set[bool] = set()

    def on_event(event: ButtonEvent, data: dict[str, Any]) -> None:
        threads.add(asyncio.get_running_loop() is loop)
        events.append((event, data))

    settings = ButtonSettings(pin=17, bounce_ms=0, reset_hold_s=0.2, double_press_ms=300)
    button = PushButton(settings, on_event, loop, pin_factory=factory)
    pin = factory.pin(17)
    pin.drive_low()
    pin.drive_high()
    await _collect(events, 2)
    pin.drive_low()  # second press soon after: a double press
    pin.drive_high()
    await _collect(events, 5)
    assert [e for e, _ in events] == [
        ButtonEvent.PRESSED, ButtonEvent.RELEASED,
        ButtonEvent.PRESSED, ButtonEvent.DOUBLE_PRESSED, ButtonEvent.RELEASED,
    ]
    events.clear()
    await asyncio.sleep(0.4)
    pin.drive_low()
    await asyncio.sleep(0.35)  # longer than the reset hold
    pin.drive_high()
    await _collect(events, 3)
    assert [e for e, _ in events] == [ButtonEvent.PRESSED, ButtonEvent.HELD, ButtonEvent.RELEASED]
    assert events[2][1]["held_s"] >= 0.3
    assert threads == {True}
    button.close()


def test_led_patterns(factory: MockFactory) -> None:
    led = StatusLed(18, brightness=0.8, pin_factory=factory)
    pin = factory.pin(18)
    led.show(LedPattern.LISTENING)
    assert pin.state == pytest.approx(0.8)
    led.show(LedPattern.MUTED)
    assert pin.state == pytest.approx(0.04)
    led.show(LedPattern.THINKING)
    time.sleep(0.3)
    assert 0.0 < pin.state <= 1.0  # breathing: somewhere between
    led.show(LedPattern.OFF)
    assert pin.state == 0.0
    led.close()


def test_no_gpio_means_one_warning_and_no_devices(caplog: pytest.LogCaptureFixture) -> None:
    class NoPins(MockFactory):
        def pin(self, spec: Any, pin_class: Any = None, **kwargs: Any) -> Any:
            raise OSError("no GPIO chip")

    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level("WARNING"):
            result = open_gpio(ButtonSettings(pin=17), 18, lambda e, d: None, loop, pin_factory=NoPins())
    finally:
        loop.close()
    assert result is None
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert "GPIO disabled" in warnings[0].getMessage()


def test_real_gpiozero_without_a_pi_disables_gpio_cleanly(caplog: pytest.LogCaptureFixture) -> None:
    # No pin factory given: gpiozero probes its real backends, none of which has a GPIO
    # chip on this machine. The daemon must carry on without button and LED.
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level("WARNING", logger="edgevoice.device.hardware.gpio"):
            result = open_gpio(ButtonSettings(pin=17), None, lambda e, d: None, loop)
    finally:
        loop.close()
    assert result is None
    assert any("GPIO disabled" in r.getMessage() for r in caplog.records)
