"""``[audio]`` capture channels: a microphone named twice, a channel the PCM does not
have, or a loopback reference on a microphone's channel is a clear config error that
names the key and what to do (before the device is opened, not as an ALSA failure)."""

from __future__ import annotations

import pytest

from edgevoice.device.config.loader import ConfigError, load_config


def problems(*overrides: str) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=list(overrides), search_paths=[])
    return [(p.key, p.message) for p in caught.value.problems]


def test_a_microphone_named_twice() -> None:
    ((key, message),) = problems("audio.capture_channels=4", "audio.mic_channels=[0, 1, 1]")
    assert key == "audio.mic_channels" and "channel 1 more than once" in message


def test_a_channel_the_capture_pcm_does_not_have() -> None:
    ((key, message),) = problems("audio.capture_channels=2", "audio.mic_channels=[0, 3]")
    assert key == "audio.mic_channels" and "channel 3 is not one of the 2 capture channels" in message
    assert "raise [audio] capture_channels" in message


def test_no_microphone_channel() -> None:
    ((key, message),) = problems("audio.mic_channels=[]")
    assert key == "audio.mic_channels" and "names no channel" in message


def test_a_reference_on_a_microphones_channel_or_outside_the_pcm() -> None:
    ((key, message),) = problems("audio.capture_channels=2", "audio.mic_channels=[0, 1]",
                                 "audio.reference_channel=1")
    assert key == "audio.reference_channel" and "also a microphone" in message
    ((key, message),) = problems("audio.capture_channels=2", "audio.reference_channel=5")
    assert key == "audio.reference_channel" and "not one of the 2 capture channels" in message


def test_good_channel_layouts_load() -> None:
    for overrides in ([], ["audio.capture_channels=4", "audio.mic_channels=[0, 1, 2]",
                           "audio.reference_channel=3"],
                      ["audio.capture_channels=2", "audio.mic_channels=[1]"]):
        load_config(overrides=overrides, search_paths=[])
