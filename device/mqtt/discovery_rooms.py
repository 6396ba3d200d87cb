"""Home Assistant discovery for announcements, questions, remote turns and timers: two
``notify`` entities (Announce: speak the message; Ask: speak it, then listen without
the wake word — what "ask question" automations need), a ``Listen`` button, and the
timers' sensors (how many, when the next ends, whether one rings).

They join the device the base entities (:mod:`.discovery`) describe and take its device
block, availability and id scheme from the first of those, so the two stay one HA device.
"""

from __future__ import annotations

from typing import Any

from edgevoice.device.mqtt.topics import Topics

# The keys every entity of the device shares, taken from a base entity's config.
_SHARED = ("device", "availability_topic", "availability_template", "payload_available",
           "payload_not_available")


def rooms_discovery_messages(
    topics: Topics, base: list[tuple[str, dict[str, Any]]], *, discovery_prefix: str
) -> list[tuple[str, dict[str, Any]]]:
    """(topic, config) of the announce/ask notify entities and the listen button."""
    if not base:
        return []
    first_topic, first = base[0]
    shared = {k: first[k] for k in _SHARED if k in first}
    # The base entities' unique ids are "<uid>_<object>": keep the scheme.
    base_object = first_topic.split("/")[-2]
    uid = str(first.get("unique_id", f"edgevoice_{topics.device_id}_{base_object}"))[: -len(base_object) - 1]
    entities: list[tuple[str, str, dict[str, Any]]] = [
        ("notify", "announce", {
            "name": "Announce",
            "command_topic": topics.command("announce"),
            "command_template": '{"text": {{ value | tojson }}}',
            "icon": "mdi:bullhorn",
        }),
        ("notify", "ask", {
            "name": "Ask",
            "command_topic": topics.command("announce"),
            "command_template": '{"text": {{ value | tojson }}, "then_listen": true}',
            "icon": "mdi:account-question",
        }),
        ("sensor", "timers", {
            "name": "Timers",
            "state_topic": topics.state,
            "value_template": "{{ (value_json.timers or []) | length }}",
            "state_class": "measurement",
            "icon": "mdi:timer-outline",
        }),
        ("sensor", "next_timer", {
            "name": "Next timer",
            "state_topic": topics.state,
            "value_template": "{{ value_json.next_timer_at or None }}",
            "device_class": "timestamp",
        }),
        ("binary_sensor", "timer_ringing", {
            "name": "Timer ringing",
            "state_topic": topics.state,
            "value_template": "{{ 'ON' if value_json.timer_ringing else 'OFF' }}",
            "payload_on": "ON",
            "payload_off": "OFF",
            "icon": "mdi:timer-alert",
        }),
        ("button", "listen", {
            "name": "Listen",
            "command_topic": topics.command("listen"),
            "payload_press": "{}",
            "icon": "mdi:microphone",
        }),
    ]
    out = []
    for component, object_id, config in entities:
        payload: dict[str, Any] = {**config, **shared, "unique_id": f"{uid}_{object_id}"}
        if "object_id" in first:  # the id key the base entities use (HA renamed it)
            payload["object_id"] = f"{uid}_{object_id}"
        if "default_entity_id" in first:
            payload["default_entity_id"] = f"{component}.{uid}_{object_id}"
        out.append((f"{discovery_prefix}/{component}/{topics.device_id}/{object_id}/config", payload))
    return out
