"""The telemetry message: the board's statistics, the runtime's counters and the
connection's own.

The runtime passes a :data:`TelemetrySource`: a plain callable, run on the event
loop, that returns a JSON-serialisable mapping of its counters — by convention
``input_dbfs``, ``xruns``, ``echo_reduction_db``, ``echo_delay_ms``, ``turns``,
``barge_ins``, ``agent_errors`` (by code), ``latency_ms`` (``{stage: {"p50", "p95"}}``).
Whatever it returns is published under ``runtime`` untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from edgevoice.device.system.sysinfo import SystemStats

_LOGGER = logging.getLogger(__name__)

TelemetrySource = Callable[[], Mapping[str, Any]]


def read_source(source: TelemetrySource | None) -> dict[str, Any]:
    """Call the runtime's source; a failing source costs its part, not the message."""
    if source is None:
        return {}
    try:
        return dict(source())
    except Exception as err:
        _LOGGER.warning("telemetry source failed: %s", err)
        return {"error": str(err)}


def build_telemetry(
    *,
    device_id: str,
    seq: int,
    ts: float,
    system: SystemStats | None,
    runtime: Mapping[str, Any],
    last_turn: Mapping[str, Any] | None,
    mqtt: Mapping[str, Any],
) -> dict[str, Any]:
    # Every key a discovery template reads is always there (null until known): HA warns
    # on every message whose template reads a missing key.
    return {
        "device": device_id,
        "seq": seq,
        "ts": round(ts, 3),
        "system": system.as_dict() if system is not None else {},
        "runtime": {**RUNTIME_KEYS, **runtime},
        "last_turn": {**LAST_TURN_KEYS, **(last_turn or {})},
        "mqtt": dict(mqtt),
    }


RUNTIME_KEYS: dict[str, Any] = {"echo_reduction_db": None, "echo_delay_ms": None, "input_dbfs": None}
LAST_TURN_KEYS: dict[str, Any] = {"turn_id": None, "status": None, "voice_to_voice_ms": None}
