"""``edgevoice fleet list|send`` against real devices on a real mosquitto."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from support.mosquitto import Broker, password_of
from support.mqtt_fakes import Observer, await_until, running_device

from edgevoice.device.cli import main
from edgevoice.device.config.loader import build_config
from edgevoice.device.mqtt.fleet import Addressee, FleetClient


def operator_config(broker: Broker, tmp_path: Path, protocol: str = "5") -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(
        f'[mqtt]\nurl = "{broker.url}"\nusername = "fleet"\npassword = "{password_of("fleet")}"\n'
        f'protocol = "{protocol}"\n'
    )
    return path


def silent_device(broker: Broker, user: str) -> Observer:
    """Online by its retained status, but never answers commands."""
    client = Observer(broker, user)
    client.publish(f"edgevoice/{user}/status", {"state": "online", "version": "0.0.1", "group": "hall"},
                   retain=True)
    return client


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """main() logs to this test's captured stderr; don't keep that handler afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


async def run_cli(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def test_fleet_list_and_send(broker: Broker, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = str(operator_config(broker, tmp_path))
    quiet = silent_device(broker, "dev4")
    watch = Observer(broker)
    watch.subscribe("edgevoice/+/telemetry", "edgevoice/+/state")
    try:
        async with AsyncExitStack() as stack:
            for user, group in (("dev1", "kitchen"), ("dev2", "kitchen"), ("dev3", "hall")):
                await stack.enter_async_context(running_device(broker, user, tmp_path, group=group))
            for user in ("dev1", "dev2", "dev3"):  # their first telemetry and state are out
                await watch.await_on(f"edgevoice/{user}/telemetry")
                await watch.await_on(f"edgevoice/{user}/state")
            capsys.readouterr()

            assert await run_cli("fleet", "list", "--config", config, "--json") == 0
            listed = {d["id"]: d for d in json.loads(capsys.readouterr().out)}
            assert sorted(listed) == ["dev1", "dev2", "dev3", "dev4"]
            assert listed["dev1"]["online"] and listed["dev1"]["group"] == "kitchen"
            assert listed["dev1"]["state"] == "idle"
            assert 0 <= listed["dev1"]["telemetry_age_s"] < 5
            assert listed["dev4"]["telemetry_age_s"] is None

            assert await run_cli("fleet", "list", "--config", config, "--group", "kitchen") == 0
            table = capsys.readouterr().out
            assert table.splitlines()[0].split() == ["ID", "ONLINE", "VERSION", "GROUP", "STATE", "TELEMETRY"]
            assert [line.split()[0] for line in table.splitlines()[1:3]] == ["dev1", "dev2"]
            assert "2 device(s), 2 online" in table

            code = await run_cli("fleet", "send", "--config", config, "--all", "ping", "--wait", "1")
            out = capsys.readouterr().out
            assert code == 1  # dev4 did not answer
            assert [line.split()[:2] for line in out.splitlines()[:3]] == [
                ["dev1", "ok"], ["dev2", "ok"], ["dev3", "ok"]]
            assert "no answer (1): dev4" in out

            code = await run_cli("fleet", "send", "--config", config, "--group", "kitchen", "set_volume",
                                 '{"level": 0.2}', "--json")
            report = json.loads(capsys.readouterr().out)
            assert code == 0
            assert [a["device"] for a in report["answers"]] == ["dev1", "dev2"]
            assert all(a["result"] == {"volume": 0.2} for a in report["answers"])
            assert report["no_answer"] == []

            code = await run_cli("fleet", "send", "--config", config, "--device", "dev3", "say",
                                 '{"text": 1}')
            assert code == 1
            assert "dev3  error  invalid_argument" in capsys.readouterr().out
    finally:
        quiet.close()
        watch.close()


async def test_fleet_send_over_mqtt311_and_to_an_offline_device(broker: Broker, tmp_path: Path) -> None:
    config = build_config([("t", {"mqtt": {"url": broker.url, "username": "fleet",
                                           "password": password_of("fleet"), "protocol": "3.1.1"}})]).mqtt
    async with running_device(broker, "dev1", tmp_path, protocol="3.1.1"):
        with FleetClient(config) as fleet:
            assert fleet.client.protocol == mqtt.MQTTv311
            report = await asyncio.to_thread(fleet.send, Addressee(device="dev1"), "ping", {}, wait_s=3)
            assert list(report.answers) == ["dev1"] and report.all_ok
            missing = await asyncio.to_thread(fleet.send, Addressee(device="dev2"), "ping", {}, wait_s=0.3)
            assert missing.missing == ["dev2"] and not missing.all_ok


async def test_fleet_list_marks_a_stopped_device_offline(broker: Broker, tmp_path: Path) -> None:
    config = build_config([("t", {"mqtt": {"url": broker.url, "username": "fleet",
                                           "password": password_of("fleet")}})]).mqtt
    async with running_device(broker, "dev1", tmp_path) as (bridge, _t, _b):
        assert await await_until(lambda: bridge.connected)
    with FleetClient(config) as fleet:
        devices = await asyncio.to_thread(fleet.list_devices)
    assert [(d.id, d.online) for d in devices] == [("dev1", False)]


async def test_fleet_refuses_bad_credentials(broker: Broker, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(f'[mqtt]\nurl = "{broker.url}"\nusername = "fleet"\npassword = "wrong"\n')
    assert await run_cli("fleet", "list", "--config", str(config)) == 4
    assert "did not accept the connection" in capsys.readouterr().err


def test_fleet_cli_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "none.toml"
    empty.write_text("")
    assert main(["fleet", "send", "--config", str(empty), "--all", "ping", "{oops"]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["fleet", "send", "--config", str(empty), "--all", "ping", "[1]"]) == 2
    assert main(["fleet", "list", "--config", str(empty)]) == 4
    assert "no broker configured" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fleet", "send", "--config", str(empty), "--all", "--group", "g", "ping"])
