"""GPIO outputs declared in config and offered to the agent as tools (a door relay,
an intercom's gate). Driven through gpiozero with the daemon's pin factory."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from edgevoice.device.config.schema import GpioOutputConfig
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)


class GpioOutputError(EdgeVoiceError):
    code = "gpio_output"


def _device(outputs: dict[str, Any], output: GpioOutputConfig, pin_factory: Any) -> Any:
    device = outputs.get(output.name)
    if device is None:
        if output.pin < 0:
            raise GpioOutputError(f"GPIO output {output.name!r} has no pin: set its pin in config")
        try:
            from gpiozero import DigitalOutputDevice

            device = DigitalOutputDevice(output.pin, active_high=output.active_high,
                                         initial_value=False, pin_factory=pin_factory)
        except Exception as err:
            raise GpioOutputError(
                f"GPIO output {output.name!r} (pin {output.pin}) cannot be driven on this board: {err}"
            ) from err
        outputs[output.name] = device
    return device


async def drive_output(outputs: dict[str, Any], output: GpioOutputConfig, on: bool | None,
                       pin_factory: Any = None) -> bool:
    """Pulse, toggle or switch ``output``; return whether it is on afterwards."""
    device = _device(outputs, output, pin_factory)
    if output.mode == "pulse":
        device.on()
        _LOGGER.info("GPIO output %s pulsed for %d ms", output.name, output.pulse_ms)
        try:
            await asyncio.sleep(output.pulse_ms / 1000.0)
        finally:
            device.off()
        return False
    if output.mode == "toggle":
        device.toggle()
    else:
        device.value = bool(on)
    state = bool(device.value)
    _LOGGER.info("GPIO output %s is now %s", output.name, "on" if state else "off")
    return state


def close_outputs(outputs: dict[str, Any]) -> None:
    for device in outputs.values():
        device.close()
    outputs.clear()
