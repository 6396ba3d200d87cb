"""What an agent may do to the device: the hook the conversation runtime implements.

Tools that act on the device (volume, ending the conversation, GPIO outputs) and the
local agent's "stop"/"start over" call these; the runtime passes its implementation
to :func:`~edgevoice.device.agents.factory.build_agent`.
"""

from __future__ import annotations

import abc
import logging
from typing import Any

from edgevoice.device.config.schema import GpioOutputConfig
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)


class DeviceActions(abc.ABC):
    """The device side of agent tools. Every method runs on the event loop."""

    @abc.abstractmethod
    async def set_volume(self, level: float) -> float:
        """Set the speaker volume (0.0 to 1.0); return the level now in force."""

    @abc.abstractmethod
    async def end_conversation(self) -> None:
        """End the conversation after the current reply (back to waiting for the wake word)."""

    @abc.abstractmethod
    async def start_over(self) -> None:
        """Start a new conversation: the runtime resets the agent session and says so."""

    @abc.abstractmethod
    async def gpio_output(self, output: GpioOutputConfig, on: bool | None) -> bool:
        """Drive a declared GPIO output: ``mode`` pulse (``on`` is None), toggle (None) or
        switch (``on`` True/False). Return whether the output is on afterwards."""

    async def timers_action(self, action: str, name: str | None = None,
                            seconds: float | None = None) -> dict[str, Any]:
        """Timers (edgevoice.device.timers): ``action`` "set" (``seconds``, ``name``
        optional), "left" or "cancel" (``name`` optional); returns ``{"say": what to tell
        the person, "timers": [...]}``. A device without timers says so."""
        raise EdgeVoiceError("this device has no timers", code="timers_unavailable")


class RecordingActions(DeviceActions):
    """Actions that only remember what was asked: for ``edgevoice chat`` (no speaker, no
    pins) and tests. ``ended`` and ``restarted`` tell the caller what happened."""

    def __init__(self, volume: float = 1.0) -> None:
        self.volume = volume
        self.ended = False
        self.restarted = False
        self.outputs: dict[str, bool] = {}
        self.calls: list[tuple[str, object]] = []

    async def set_volume(self, level: float) -> float:
        self.volume = min(1.0, max(0.0, level))
        self.calls.append(("set_volume", self.volume))
        _LOGGER.info("volume set to %.2f", self.volume)
        return self.volume

    async def end_conversation(self) -> None:
        self.ended = True
        self.calls.append(("end_conversation", None))

    async def start_over(self) -> None:
        self.restarted = True
        self.calls.append(("start_over", None))

    async def gpio_output(self, output: GpioOutputConfig, on: bool | None) -> bool:
        if output.mode == "pulse":
            state = False
        elif output.mode == "toggle":
            state = not self.outputs.get(output.name, False)
        else:
            state = bool(on)
        self.outputs[output.name] = state
        self.calls.append(("gpio_output", (output.name, on)))
        return state
