"""edgevoice doctor against real peers: virtual ALSA PCMs, the example agent server, mosquitto."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.agent_server import example_server
from support.alsa_devices import AlsaDevices, install_alsa_devices, write_raw
from support.mosquitto import Broker, broker, mqtt_pki, password_of  # noqa: F401
from support.ports import free_port

from edgevoice.device.cli import main
from edgevoice.device.config import Config, build_config
from edgevoice.device.doctor import CheckStatus, DoctorOptions, check_audio, check_disk, run_checks

OPTS = DoctorOptions(agent_timeout_s=5.0, mqtt_timeout_s=3.0)


@pytest.fixture
def alsa_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AlsaDevices:
    return install_alsa_devices(tmp_path, monkeypatch)


def config(**sections: dict[str, Any]) -> Config:
    return build_config([("test", sections)])


def test_audio_opens_the_configured_devices(alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    mic = write_raw(tmp_path / "mic.raw", np.zeros((1600, 2), dtype=np.int16))
    good = config(audio={"capture_device": alsa_devices.mic(mic, 2), "capture_channels": 2,
                         "mic_channels": [0, 1], "playback_device": alsa_devices.speaker(tmp_path / "o.raw")})
    result = check_audio(good)
    assert result.status is CheckStatus.OK, result
    bad = config(audio={"capture_device": "ev_no_such_pcm", "playback_device": "ev_no_such_pcm"})
    result = check_audio(bad)
    assert result.status is CheckStatus.FAIL and "devices" in result.fix


async def test_agent_probe_reports_time_to_first_text() -> None:
    async with example_server() as server:
        cfg = config(llm={"provider": "agent"}, agent={"url": server.url + "/agent"})
        [result] = await run_checks(cfg, only=("agent",), options=OPTS)
    assert result.status is CheckStatus.OK, result
    assert 0 < result.data["first_text_ms"] <= result.data["total_ms"]
    # The same config with the server gone fails, with a fix.
    [down] = await run_checks(cfg, only=("agent",), options=OPTS)
    assert down.status is CheckStatus.FAIL and down.fix


async def test_mqtt_connects_with_credentials_and_fails_without(broker: Broker) -> None:  # noqa: F811
    user = broker.users[0]
    good = config(mqtt={"url": broker.url, "username": user, "password": password_of(user)})
    [ok] = await run_checks(good, only=("mqtt",), options=OPTS)
    assert ok.status is CheckStatus.OK, ok
    tls = config(mqtt={"url": broker.tls_url, "username": user, "password": password_of(user),
                       "ca_file": str(broker.pki.ca_file)})
    [ok_tls] = await run_checks(tls, only=("mqtt",), options=OPTS)
    assert ok_tls.status is CheckStatus.OK, ok_tls
    wrong = config(mqtt={"url": broker.url, "username": user, "password": "wrong"})
    [refused] = await run_checks(wrong, only=("mqtt",), options=OPTS)
    assert refused.status is CheckStatus.FAIL and "refused" in refused.detail
    broker.stop()
    [down] = await run_checks(good, only=("mqtt",), options=OPTS)
    assert down.status is CheckStatus.FAIL


async def test_mqtt_off_is_skipped_and_gpio_uses_the_mock_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "mock")
    results = await run_checks(config(), only=("mqtt", "gpio", "disk"), options=OPTS)
    assert [r.status for r in results] == [CheckStatus.SKIP, CheckStatus.OK, CheckStatus.OK]
    assert "MockFactory" in results[1].detail


def test_disk_fails_when_the_threshold_is_not_met(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgevoice.device import doctor

    monkeypatch.setattr(doctor, "DISK_FAIL_MB", 10**12)
    result = check_disk(config(device={"state_dir": str(tmp_path)}))
    assert result.status is CheckStatus.FAIL and result.fix


def test_cli_table_json_and_exit_status(alsa_devices: AlsaDevices, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{port}"\n')
    assert main(["doctor", "--config", str(cfg), "--only", "mqtt,disk"]) == 1
    out = capsys.readouterr().out
    assert "mqtt" in out and "FAIL" in out and "fix:" in out
    cfg.write_text('[audio]\nbackend = "simulated"\n')
    assert main(["doctor", "--config", str(cfg), "--only", "audio,mqtt", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and [c["status"] for c in data["checks"]] == ["ok", "skip"]
