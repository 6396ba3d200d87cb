"""Home Assistant MQTT discovery: one retained config message per entity.

Entities: sensors (conversation state, SoC temperature, last voice-to-voice latency,
echo reduction), a switch (microphone mute), a number (volume), buttons (interrupt,
reset session). Availability follows ``…/status``, which the last will sets to
offline. Topics: ``<discovery_prefix>/<component>/<device_id>/<object>/config``.
"""

from __future__ import annotations

import json
from typing import Any

from edgevoice import __version__
from edgevoice.device.mqtt.topics import Topics


def discovery_messages(
    topics: Topics, *, discovery_prefix: str, name: str
) -> list[tuple[str, dict[str, Any]]]:
    """(topic, config) for every entity of the device."""
    device_id = topics.device_id
    uid = f"edgevoice_{device_id}"
    device = {
        "identifiers": [uid],
        "name": name or f"edgevoice {device_id}",
        "manufacturer": "edgevoice",
        "model": "edgevoice voice front end",
        "sw_version": __version__,
    }
    common = {
        "device": device,
        "availability_topic": topics.status,
        "availability_template": "{{ value_json.state }}",
        "payload_available": "online",
        "payload_not_available": "offline",
    }
    entities: list[tuple[str, str, dict[str, Any]]] = [
        ("sensor", "state", {
            "name": "Conversation state",
            "state_topic": topics.state,
            "value_template": "{{ value_json.state }}",
            "icon": "mdi:account-voice",
        }),
        ("sensor", "soc_temperature", {
            "name": "SoC temperature",
            "state_topic": topics.telemetry,
            "value_template": "{{ value_json.system.soc_temp_c }}",
            "device_class": "temperature",
            "unit_of_measurement": "°C",
            "state_class": "measurement",
            "entity_category": "diagnostic",
        }),
        ("sensor", "voice_to_voice", {
            "name": "Last voice-to-voice latency",
            "state_topic": topics.telemetry,
            "value_template": "{{ (value_json.last_turn or {}).voice_to_voice_ms }}",
            "device_class": "duration",
            "unit_of_measurement": "ms",
            "state_class": "measurement",
        }),
        ("sensor", "echo_reduction", {
            "name": "Echo reduction",
            "state_topic": topics.telemetry,
            "value_template": "{{ value_json.runtime.echo_reduction_db }}",
            "unit_of_measurement": "dB",
            "state_class": "measurement",
            "entity_category": "diagnostic",
        }),
        ("switch", "mic_mute", {
            "name": "Microphone mute",
            "state_topic": topics.state,
            "value_template": "{{ 'ON' if value_json.mic_muted else 'OFF' }}",
            "state_on": "ON",
            "state_off": "OFF",
            "command_topic": topics.command("mute"),
            "payload_on": json.dumps({"mic": True}),
            "payload_off": json.dumps({"mic": False}),
            "icon": "mdi:microphone-off",
        }),
        ("number", "volume", {
            "name": "Volume",
            "state_topic": topics.state,
            "value_template": "{{ value_json.volume }}",
            "command_topic": topics.command("set_volume"),
            "command_template": '{"level": {{ value }}}',
            "min": 0.0,
            "max": 1.0,
            "step": 0.05,
            "mode": "slider",
        }),
        ("button", "interrupt", {
            "name": "Interrupt",
            "command_topic": topics.command("interrupt"),
            "payload_press": "{}",
        }),
        ("button", "reset_session", {
            "name": "Reset session",
            "command_topic": topics.command("reset_session"),
            "payload_press": "{}",
        }),
    ]
    out = []
    for component, object_id, config in entities:
        payload = {**config, **common, "unique_id": f"{uid}_{object_id}", "object_id": f"{uid}_{object_id}"}
        out.append((f"{discovery_prefix}/{component}/{device_id}/{object_id}/config", payload))
    return out
