"""Home Assistant MQTT discovery: one retained config message per entity.

Entities: sensors (conversation state, SoC temperature, last voice-to-voice latency,
echo reduction), a switch (microphone mute), a number (volume, in percent), buttons
(interrupt, reset session). Availability follows ``…/status``, which the last will
sets to offline. Topics: ``<discovery_prefix>/<component>/<device_id>/<object>/config``.

HA's current schema: ``default_entity_id`` (``domain.object``; ``object_id`` is
deprecated since 2025.10 and stops working in 2026.4; older HA drops the unknown key),
an ``origin`` block, ``entity_category`` on the settings. Templates read keys with
``.get`` so a key that is missing or null renders ``None`` (HA's "no value"), never a
template warning. MQTT has no icon template: the mute switch's config is published
again with the other icon when the mute changes (:func:`mute_switch`).
"""

from __future__ import annotations

import json
from typing import Any

from edgevoice import __version__
from edgevoice.device.mqtt.topics import Topics

MUTE_ICONS = {False: "mdi:microphone", True: "mdi:microphone-off"}
ORIGIN = {"name": "edgevoice", "sw_version": __version__,
          "support_url": "https://github.com/edgevoice/edgevoice"}


def discovery_messages(
    topics: Topics, *, discovery_prefix: str, name: str, mic_muted: bool = False
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
            "value_template": "{{ (value_json.system or {}).get('soc_temp_c') }}",
            "device_class": "temperature",
            "unit_of_measurement": "°C",
            "state_class": "measurement",
            "entity_category": "diagnostic",
        }),
        ("sensor", "voice_to_voice", {
            "name": "Last voice-to-voice latency",
            "state_topic": topics.telemetry,
            "value_template": "{{ (value_json.last_turn or {}).get('voice_to_voice_ms') }}",
            "device_class": "duration",
            "unit_of_measurement": "ms",
            "state_class": "measurement",
        }),
        ("sensor", "echo_reduction", {
            "name": "Echo reduction",
            "state_topic": topics.telemetry,
            "value_template": "{{ (value_json.runtime or {}).get('echo_reduction_db') }}",
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
            "icon": MUTE_ICONS[mic_muted],
            "entity_category": "config",
        }),
        ("number", "volume", {
            "name": "Volume",
            "state_topic": topics.state,
            "value_template": "{{ ((value_json.volume or 0) * 100) | round(0) }}",
            "command_topic": topics.command("set_volume"),
            "command_template": '{"level": {{ (value | float(0)) / 100 }}}',
            "min": 0,
            "max": 100,
            "step": 5,
            "unit_of_measurement": "%",
            "mode": "slider",
            "icon": "mdi:volume-high",
            "entity_category": "config",
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
            "entity_category": "config",
        }),
    ]
    out = []
    for component, object_id, config in entities:
        payload = {**config, **common, "unique_id": f"{uid}_{object_id}",
                   "default_entity_id": f"{component}.{uid}_{object_id}", "origin": ORIGIN}
        out.append((f"{discovery_prefix}/{component}/{device_id}/{object_id}/config", payload))
    return out


def mute_switch(topics: Topics, *, discovery_prefix: str, name: str,
                mic_muted: bool) -> tuple[str, dict[str, Any]]:
    """The mute switch's config with the icon of ``mic_muted`` (published on each change)."""
    messages = discovery_messages(topics, discovery_prefix=discovery_prefix, name=name, mic_muted=mic_muted)
    return next(m for m in messages if m[0].endswith("/mic_mute/config"))
