"""MQTT telemetry and fleet commands (see ``docs/mqtt.md``).

The runtime starts :class:`MqttBridge` with its :class:`~edgevoice.device.control.DeviceControl`; the
fleet tool (``edgevoice fleet``) uses :mod:`edgevoice.device.mqtt.fleet`.
"""

from edgevoice.device.mqtt.bridge import MqttBridge
from edgevoice.device.mqtt.commands import (
    Answer,
    CommandRouter,
    ErrorCode,
    fetch_model_in_thread,
)
from edgevoice.device.mqtt.telemetry import TelemetrySource

__all__ = [
    "Answer",
    "CommandRouter",
    "ErrorCode",
    "MqttBridge",
    "TelemetrySource",
    "fetch_model_in_thread",
]
