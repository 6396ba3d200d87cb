from __future__ import annotations

from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from edgevoice.device.config.schema import GpioOutputConfig
from edgevoice.device.hardware.gpio_outputs import GpioOutputError, close_outputs, drive_output


async def test_pulse_toggle_and_switch_drive_the_pin() -> None:
    factory = MockFactory()
    outputs: dict[str, Any] = {}
    try:
        door = GpioOutputConfig(name="open_door", pin=5, mode="pulse", pulse_ms=50)
        assert await drive_output(outputs, door, None, factory) is False
        states = [s.state for s in factory.pin(5).states]
        assert states[-2:] == [True, False]  # on, then off after the pulse
        lamp = GpioOutputConfig(name="lamp", pin=6, mode="toggle")
        assert await drive_output(outputs, lamp, None, factory) is True
        assert await drive_output(outputs, lamp, None, factory) is False
        relay = GpioOutputConfig(name="relay", pin=7, mode="switch", active_high=False)
        assert await drive_output(outputs, relay, True, factory) is True
        assert factory.pin(7).state is False  # active low: on pulls the pin low
    finally:
        close_outputs(outputs)
        factory.reset()


async def test_an_output_without_a_pin_is_a_clear_error() -> None:
    with pytest.raises(GpioOutputError, match="has no pin"):
        await drive_output({}, GpioOutputConfig(name="x"), None, MockFactory())
