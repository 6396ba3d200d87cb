"""``edgevoice devices``: PCMs listed and probed by opening them (real alsa-lib devices)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.alsa_devices import AlsaDevices, install_alsa_devices

from edgevoice.audio.io.devices import list_devices, probe_device
from edgevoice.device.cli import main


@pytest.fixture
def alsa_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AlsaDevices:
    return install_alsa_devices(tmp_path, monkeypatch)


def test_probe_finds_what_a_restricted_device_accepts(alsa_devices: AlsaDevices) -> None:
    info = probe_device(alsa_devices.four_channels_only, "capture")
    assert info.available
    assert info.channels == (4,)
    assert 16000 in info.rates and 48000 in info.rates
    assert {"S16_LE", "S32_LE"} <= set(info.formats)


def test_a_missing_device_is_reported_not_raised(alsa_devices: AlsaDevices) -> None:
    info = probe_device("no_such_pcm", "playback")
    assert not info.available and "No such file" in info.error


def test_advertised_pcms_are_listed_for_both_directions(alsa_devices: AlsaDevices) -> None:
    infos = list_devices()
    names = {(i.kind, i.name) for i in infos if i.available}
    assert {("capture", "evnull"), ("playback", "evnull"), ("capture", "evarray")} <= names


def test_cli_json_and_text(alsa_devices: AlsaDevices, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["devices", "--json", "--capture", "--set", "audio.backend=simulated",
                 "--device", alsa_devices.four_channels_only])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    array = [d for d in data["devices"] if d["name"] == "evarray"]
    assert array and array[0]["channels"] == [4] and array[0]["kind"] == "capture"
    assert all(d["kind"] == "capture" for d in data["devices"])

    assert main(["devices", "--playback", "--set", "audio.backend=simulated"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("PLAYBACK") and "evnull" in text and "CAPTURE" not in text
