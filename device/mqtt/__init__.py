"""MQTT telemetry and fleet commands (see ``docs/mqtt.md``).

The runtime starts :class:`MqttBridge` and implements :class:`CommandTarget`; the
fleet tool (``edgevoice fleet``) uses :mod:`edgevoice.device.mqtt.fleet`.
"""

from edgevoice.device.mqtt.bridge import MqttBridge
from edgevoice.device.mqtt.commands import (
    Answer,
    CommandRouter,
    CommandTarget,
    ErrorCode,
    fetch_model_in_thread,
)
from edgevoice.device.mqtt.telemetry import TelemetrySource

__all__ = [
    "Answer",
    "CommandRouter",
    "CommandTarget",
    "ErrorCode",
    "MqttBridge",
    "TelemetrySource",
    "fetch_model_in_thread",
]
