"""Remote diagnostics on the real daemon over a real mosquitto with the shipped ACL:
``doctor``, ``aec_selftest`` (idle only) and ``logs`` (scrubbed), their bad inputs, and
``edgevoice fleet send --group G doctor`` printing one row per device."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.device_commands import Commands, device_overrides
from support.device_harness import running_device
from support.mosquitto import Broker, password_of
from support.mqtt_fakes import Observer

from edgevoice.device.cli import main
from edgevoice.device.events import EventType
from edgevoice.device.system.logs import RecentLogHandler, SecretFilter, scrub_secrets


@pytest.fixture
def log_ring() -> Iterator[RecentLogHandler]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    ring = RecentLogHandler()
    root.addHandler(ring)
    root.setLevel(logging.INFO)
    yield ring
    root.handlers = handlers
    root.setLevel(level)


async def test_doctor_selftest_and_logs_over_mqtt(tmp_path: Path, broker: Broker,
                                                 log_ring: RecentLogHandler) -> None:
    observer = Observer(broker)
    command = Commands(observer, "dev1")
    try:
        async with running_device(tmp_path, device_overrides(broker, "dev1")) as device:
            await command.online()
            scrub_secrets([password_of("dev1")])  # as the CLI does at start
            assert (await command("ping"))["ok"]

            report = await command("doctor", {"only": "audio,mqtt,disk"})
            assert report["ok"], report
            checks = report["result"]["checks"]
            assert [c["name"] for c in checks] == ["audio", "mqtt", "disk"]
            assert set(checks[0]) == {"name", "status", "detail", "fix", "data"}  # the CLI's shape
            assert checks[0]["status"] == "ok" and checks[0]["data"]["live"] is True
            assert checks[1]["status"] == "ok"  # it logged in to the broker as dev1
            assert isinstance(report["result"]["ok"], bool)

            bad = await command("doctor", {"only": "audio,bogus"})
            assert bad["error"]["code"] == "invalid_argument" and "bogus" in bad["error"]["message"]
            bad = await command("doctor", {"only": 3})
            assert bad["error"]["code"] == "invalid_argument"
            bad = await command("doctor", {"checks": "audio"})
            assert bad["error"]["code"] == "invalid_argument"

            result = await command("aec_selftest", {}, timeout_s=60)
            assert result["ok"], result
            measured = result["result"]
            assert set(measured) == {"engine", "delay_ms", "echo_gain_db", "erle_db", "engine_delay_ms",
                                     "reference_ok", "noise_dbfs"}
            assert measured["reference_ok"] is True
            # the simulated room's echo path: 20 ms, -10 dB
            assert measured["delay_ms"] is not None and 15 <= measured["delay_ms"] <= 40
            assert -16 <= measured["echo_gain_db"] <= -4
            assert device.daemon.conversation is not None
            assert not device.daemon.conversation.muted  # listening again afterwards
            assert (await command("aec_selftest", {"engine": "speex"}))["error"]["code"] == "invalid_argument"

            # Busy while the device speaks: nothing is played or changed.
            assert (await command("say", {"text": "This is a long sentence that keeps the device busy for "
                                                   "a while, so the self test must wait."}))["ok"]
            await device.wait_for(EventType.REPLY_STARTED)
            busy = await command("aec_selftest")
            assert busy["ok"] is False and busy["error"]["code"] == "busy"
            assert not device.daemon.conversation.muted
            await command("interrupt")

            logging.getLogger("edgevoice.test").warning("a secret in the log: %s", password_of("dev1"))
            logs = await command("logs", {"lines": 20})
            assert logs["ok"]
            lines = logs["result"]["lines"]
            assert 0 < len(lines) <= 20
            assert any("a secret in the log: ***" in line for line in lines)
            assert all(password_of("dev1") not in line for line in lines)
            for bad_lines in (0, 1001, "10", 2.5, True):
                answer = await command("logs", {"lines": bad_lines})
                assert answer["error"]["code"] == "invalid_argument", (bad_lines, answer)
            default = await command("logs")
            assert default["ok"] and len(default["result"]["lines"]) <= 100
    finally:
        observer.close()


async def test_fleet_send_doctor_prints_one_row_per_device(tmp_path: Path, broker: Broker,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "fleet.toml"
    config.write_text(f'[mqtt]\nurl = "{broker.url}"\nusername = "fleet"\n'
                      f'password = "{password_of("fleet")}"\n')
    watch = Observer(broker)
    watch.subscribe("edgevoice/+/status")
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    async with (
        running_device(tmp_path / "a", device_overrides(broker, "dev1", "hall")),
        running_device(tmp_path / "b", device_overrides(broker, "dev2", "hall")),
    ):
        for user in ("dev1", "dev2"):
            await watch.await_for(lambda m, u=user: m.topic == f"edgevoice/{u}/status"
                                  and m.json().get("state") == "online", 30)
        capsys.readouterr()
        code = await asyncio.to_thread(main, ["fleet", "send", "--config", str(config), "--group", "hall",
                                              "doctor", '{"only": "audio,disk"}', "--wait", "30"])
        out = capsys.readouterr().out.splitlines()
    watch.close()
    rows = [line for line in out if line.startswith("dev")]
    assert [row.split()[:3] for row in rows] == [["dev1", "ok", "doctor"], ["dev2", "ok", "doctor"]]
    assert all("2/2 ok" in row for row in rows), rows
    assert code == 0
    assert out[-1].startswith("2 answer(s)")


def test_short_passwords_in_device_logs_are_masked() -> None:
    assert SecretFilter([password_of("dev1")]).scrub(f"pw={password_of('dev1')}") == "pw=***"
