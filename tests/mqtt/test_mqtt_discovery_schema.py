"""MQTT discovery follows HA's current schema, and its templates never read a missing key.

The templates are rendered in Jinja2's immutable sandbox, the environment HA renders
them in, against the telemetry the bridge builds before any turn and after one."""

from __future__ import annotations

import json

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from edgevoice.device.mqtt.discovery import discovery_messages, mute_switch
from edgevoice.device.mqtt.telemetry import build_telemetry
from edgevoice.device.mqtt.topics import Topics

TOPICS = Topics("edgevoice", "dev1")


def render(template: str, payload: dict[str, object]) -> str:
    env = ImmutableSandboxedEnvironment(undefined=__import__("jinja2").StrictUndefined)
    return env.from_string(template).render(value_json=payload, value=json.dumps(payload))


def configs() -> dict[str, dict[str, object]]:
    messages = discovery_messages(TOPICS, discovery_prefix="homeassistant", name="Kitchen")
    return {t.split("/")[-2]: p for t, p in messages}


def test_discovery_uses_default_entity_id_origin_and_categories() -> None:
    found = configs()
    for topic, payload in discovery_messages(TOPICS, discovery_prefix="homeassistant", name="Kitchen"):
        component = topic.split("/")[1]
        assert "object_id" not in payload
        assert payload["default_entity_id"] == f"{component}.{payload['unique_id']}"
        assert payload["origin"]["name"] == "edgevoice" and payload["origin"]["sw_version"]
    assert found["mic_mute"]["entity_category"] == "config"
    assert found["volume"]["entity_category"] == "config"
    assert found["reset_session"]["entity_category"] == "config"
    assert "entity_category" not in found["interrupt"]
    assert found["volume"]["min"] == 0 and found["volume"]["max"] == 100
    assert found["volume"]["unit_of_measurement"] == "%"


def test_the_mute_icon_follows_the_state() -> None:
    assert configs()["mic_mute"]["icon"] == "mdi:microphone"
    topic, muted = mute_switch(TOPICS, discovery_prefix="homeassistant", name="Kitchen", mic_muted=True)
    assert topic == "homeassistant/switch/dev1/mic_mute/config" and muted["icon"] == "mdi:microphone-off"


@pytest.mark.parametrize("last_turn", [None, {"voice_to_voice_ms": 640.0}], ids=["before a turn", "after"])
def test_telemetry_templates_render_with_every_key_present(last_turn: dict[str, object] | None) -> None:
    # StrictUndefined: reading a key the message lacks raises, as HA warns.
    telemetry = build_telemetry(device_id="dev1", seq=1, ts=0.0, system=None, runtime={"turns": 0},
                                last_turn=last_turn, mqtt={})
    found = configs()
    latency = render(str(found["voice_to_voice"]["value_template"]), telemetry)
    echo = render(str(found["echo_reduction"]["value_template"]), telemetry)
    soc = render(str(found["soc_temperature"]["value_template"]), telemetry)
    assert latency == ("None" if last_turn is None else "640.0")
    assert echo == "None" and soc == "None"  # HA's MQTT sensor reads "None" as no value


def test_volume_is_a_percentage_both_ways() -> None:
    volume = configs()["volume"]
    assert render(str(volume["value_template"]), {"volume": 0.35}) == "35.0"
    env = ImmutableSandboxedEnvironment()
    assert json.loads(env.from_string(str(volume["command_template"])).render(value=40)) == {"level": 0.4}
