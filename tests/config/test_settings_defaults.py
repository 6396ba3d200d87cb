"""Each stage's own settings default to what the config defaults to.

The audio stages take plain ``*Settings`` dataclasses (they never see the config), and
``edgevoice.device.assembly`` is the one place that translates a config section into
them. The daemon always runs with the translated config values, so a stage default that
disagrees with the config default is a trap: a test or a bench that builds the stage
with its defaults measures something the device never runs. This test makes them agree.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from edgevoice.audio.hearing.bargein import BargeInSettings
from edgevoice.audio.hearing.endpoint import EndpointSettings
from edgevoice.device.assembly.conversation import button_settings, conversation_settings
from edgevoice.device.assembly.echo import barge_in_settings
from edgevoice.device.assembly.hearing import endpoint_settings
from edgevoice.device.config import Config
from edgevoice.device.config.schema import BargeInConfig, EndpointConfig, GpioConfig
from edgevoice.device.hardware.gpio import ButtonSettings
from edgevoice.device.runtime.conversation import ConversationSettings

PIN = 17  # the button has no default pin; any pin shows the other fields


def differences(translated: Any, default: Any) -> dict[str, tuple[Any, Any]]:
    return {f.name: (getattr(translated, f.name), getattr(default, f.name))
            for f in dataclasses.fields(default)
            if getattr(translated, f.name) != getattr(default, f.name)}


@pytest.mark.parametrize(
    ("translated", "default"),
    [
        pytest.param(lambda: barge_in_settings(BargeInConfig()), BargeInSettings, id="barge_in"),
        pytest.param(lambda: endpoint_settings(EndpointConfig()), EndpointSettings, id="endpoint"),
        pytest.param(lambda: conversation_settings(Config()), ConversationSettings, id="conversation"),
        pytest.param(lambda: button_settings(dataclasses.replace(GpioConfig(), button_pin=PIN)),
                     lambda: ButtonSettings(PIN), id="button"),
    ],
)
def test_stage_defaults_equal_the_config_defaults(translated: Any, default: Any) -> None:
    assert differences(translated(), default()) == {}


def test_a_difference_is_reported_field_by_field() -> None:
    changed = barge_in_settings(dataclasses.replace(BargeInConfig(), min_speech_ms=999))
    default = BargeInSettings().min_speech_ms
    assert differences(changed, BargeInSettings()) == {"min_speech_ms": (999, default)}
