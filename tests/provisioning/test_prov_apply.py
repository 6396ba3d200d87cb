from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from edgevoice.device.cli import main
from edgevoice.device.config import ConfigError, load_config
from edgevoice.provisioning.provision import provision, secret_keys

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

MID = "0123456789abcdef0123456789abcdef"
PASSPHRASE = "correct horse battery"
MQTT_PASSWORD = "mqtt-s3cret"
API_KEY = "sk-agent-key-123"

BOOT = f"""
[system]
hostname = "kitchen-voice"
timezone = "Europe/Berlin"

[wifi]
ssid = "Home Net"
passphrase = "{PASSPHRASE}"
country = "DE"

[device]
name = "Kitchen"
group = "downstairs"

[llm]
provider = "agent"

[agent]
url = "http://agent.lan:9000/agent"
api_key = "{API_KEY}"

[mqtt]
url = "mqtts://broker.lan:8883"
username = "kitchen"
password = "{MQTT_PASSWORD}"
"""


def make_root(tmp: Path) -> tuple[Path, Path]:
    root = tmp / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/machine-id").write_text(MID + "\n")
    (root / "etc/hosts").write_text("127.0.0.1\tlocalhost\n127.0.1.1\traspberrypi\n")
    (root / "etc/hostname").write_text("raspberrypi\n")
    boot = tmp / "boot"
    boot.mkdir()
    return root, boot


def snapshot(root: Path) -> dict[str, tuple[int, int, bytes | str]]:
    out: dict[str, tuple[int, int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        body: bytes | str = os.readlink(path) if path.is_symlink() else (
            path.read_bytes() if path.is_file() else b"")
        out[str(path.relative_to(root))] = (info.st_mode, info.st_mtime_ns, body)
    return out


def write_boot(boot: Path, text: str = BOOT) -> Path:
    path = boot / "edgevoice.toml"
    path.write_text(text)
    return path


def test_complete_file_is_applied(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    report = provision(write_boot(boot), root)
    assert report.changed

    config_path = root / "etc/edgevoice/config.toml"
    assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
    loaded = load_config(config_path).config
    assert loaded.device.name == "Kitchen" and loaded.device.group == "downstairs"
    assert loaded.agent.api_key == API_KEY and loaded.mqtt.password == MQTT_PASSWORD
    assert loaded.llm.provider == "agent"

    keyfile = root / "etc/NetworkManager/system-connections/edgevoice-wifi.nmconnection"
    assert stat.S_IMODE(keyfile.stat().st_mode) == 0o600
    text = keyfile.read_text()
    assert "ssid=Home Net\n" in text and f"psk={PASSPHRASE}\n" in text and "key-mgmt=wpa-psk" in text
    assert "ieee80211_regdom=DE" in (root / "etc/modprobe.d/edgevoice-wifi-country.conf").read_text()

    assert (root / "etc/hostname").read_text() == "kitchen-voice\n"
    hosts = (root / "etc/hosts").read_text()
    assert "127.0.1.1\tkitchen-voice" in hosts and "raspberrypi" not in hosts
    assert os.readlink(root / "etc/localtime") == "/usr/share/zoneinfo/Europe/Berlin"
    assert (root / "etc/timezone").read_text() == "Europe/Berlin\n"

    ident = json.loads((root / "var/lib/edgevoice/identity.json").read_text())
    assert report.identity is not None and ident["device_id"] == report.identity.device_id


def test_secrets_are_gone_from_the_boot_partition(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    path = write_boot(boot)
    report = provision(path, root)
    assert not path.exists()
    record = boot / "edgevoice.toml.applied"
    assert report.boot_record == str(record)
    text = record.read_text()
    for secret in (PASSPHRASE, MQTT_PASSWORD, API_KEY):
        assert secret not in text
    # Everything that was on the partition is still there, minus the secrets, and no temp files.
    assert sorted(p.name for p in boot.iterdir()) == ["edgevoice.toml.applied"]
    data = tomllib.loads(text)
    assert data["wifi"]["ssid"] == "Home Net" and "passphrase" not in data["wifi"]
    assert data["mqtt"]["username"] == "kitchen" and "password" not in data["mqtt"]
    assert {("wifi", "passphrase"), ("mqtt", "password"), ("agent", "api_key")} <= secret_keys()


def test_second_run_changes_nothing(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    first = provision(write_boot(boot), root)
    before = snapshot(root)
    second = provision(write_boot(boot), root)
    assert snapshot(root) == before
    assert not second.changed
    assert {c.status for c in second.changes} == {"unchanged"}
    assert second.identity == first.identity


def test_the_applied_record_is_not_applied_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, boot = make_root(tmp_path)
    path = write_boot(boot)
    provision(path, root)
    before = snapshot(root)
    assert main(["provision", "--boot-config", str(path), "--root", str(root)]) == 0
    assert "already applied" in capsys.readouterr().out
    assert main(["provision", "--boot-config", str(boot / "edgevoice.toml.applied"),
                 "--root", str(root)]) == 3
    assert snapshot(root) == before


def test_existing_config_is_merged_not_replaced(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    cfg = root / "etc/edgevoice/config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text('[audio]\ncapture_device = "hw:seeed2micvoicec"\ncapture_channels = 2\n')
    provision(write_boot(boot), root)
    loaded = load_config(cfg).config
    assert loaded.audio.capture_device == "hw:seeed2micvoicec" and loaded.audio.capture_channels == 2
    assert loaded.device.name == "Kitchen"


def test_dry_run_changes_nothing_and_says_what_would(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    path = write_boot(boot)
    before = snapshot(root)
    report = provision(path, root, dry_run=True)
    assert snapshot(root) == before and path.read_text() == BOOT
    assert {c.status for c in report.changes} >= {"would be created", "would be updated"}
    assert report.identity_status == "created"


INVALID = {
    "toml syntax": ("[wifi\nssid = 1", ""),
    "unknown section": (BOOT + "\n[audoi]\nbackend = \"wav\"\n", "audoi"),
    "bad config value": (BOOT.replace('provider = "agent"', 'provider = "gpt"'), "llm.provider"),
    "short passphrase": (BOOT.replace(PASSPHRASE, "short"), "wifi.passphrase"),
    "missing country": (BOOT.replace('country = "DE"', ""), "wifi.country"),
    "bad country": (BOOT.replace('country = "DE"', 'country = "XQ"'), "wifi.country"),
    "bad hostname": (BOOT.replace("kitchen-voice", "Kitchen_Voice"), "system.hostname"),
    "bad timezone": (BOOT.replace("Europe/Berlin", "Mars/Olympus"), "system.timezone"),
    "bad ca": (BOOT + 'ca_cert = "-----BEGIN CERTIFICATE-----\\nnope\\n-----END CERTIFICATE-----"\n',
               "mqtt.ca_cert"),
    "unknown wifi key": (BOOT.replace('country = "DE"', 'country = "DE"\npassword = "x"'), "wifi.password"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_file_changes_nothing(tmp_path: Path, case: str) -> None:
    root, boot = make_root(tmp_path)
    text, key = INVALID[case]
    path = write_boot(boot, text)
    before = snapshot(root)
    with pytest.raises(ConfigError) as info:
        provision(path, root)
    assert snapshot(root) == before
    assert path.read_text() == text  # the boot file is left for the user to fix
    assert all(p.source == str(path) for p in info.value.problems)
    assert any(p.key == key for p in info.value.problems), info.value.problems


def test_all_problems_are_listed_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, boot = make_root(tmp_path)
    text = BOOT.replace(PASSPHRASE, "short").replace("kitchen-voice", "-bad").replace(
        'provider = "agent"', 'provider = "gpt"')
    path = write_boot(boot, text)
    assert main(["provision", "--boot-config", str(path), "--root", str(root), "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert not out["ok"]
    assert {p["key"] for p in out["problems"]} == {"wifi.passphrase", "system.hostname", "llm.provider"}
    assert "short" not in json.dumps(out)  # the passphrase is never echoed


def test_open_network_and_odd_ssid(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    path = write_boot(boot, '[wifi]\nssid = "café;1"\ncountry = "GB"\nhidden = true\n')
    provision(path, root)
    text = (root / "etc/NetworkManager/system-connections/edgevoice-wifi.nmconnection").read_text()
    assert "[wifi-security]" not in text and "hidden=true" in text
    assert "ssid=" + "".join(f"{b};" for b in "café;1".encode()) + "\n" in text


def test_ca_file_beside_the_boot_config(tmp_path: Path) -> None:
    from support.prov_certs import make_ca

    root, boot = make_root(tmp_path)
    pem = make_ca(tmp_path / "ca")
    (boot / "mqtt-ca.pem").write_text(pem)
    path = write_boot(boot, BOOT + 'ca_cert_file = "mqtt-ca.pem"\n')
    provision(path, root)
    assert (root / "etc/edgevoice/mqtt-ca.pem").read_text() == pem


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_config_is_owned_by_the_service_user(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    (root / "etc/passwd").write_text(
        "root:x:0:0::/root:/bin/sh\nedgevoice:x:987:986::/var/lib/edgevoice:/usr/sbin/nologin\n")
    provision(write_boot(boot), root)
    info = (root / "etc/edgevoice/config.toml").stat()
    assert (info.st_uid, info.st_gid) == (987, 986)
    keyfile = root / "etc/NetworkManager/system-connections/edgevoice-wifi.nmconnection"
    assert (keyfile.stat().st_uid, keyfile.stat().st_gid) == (0, 0)


def test_cli_end_to_end(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    path = write_boot(boot)
    exe = Path(sys.executable).with_name("edgevoice")  # this venv's, the dev one or an installed wheel's
    result = subprocess.run([str(exe), "provision", "--boot-config", str(path), "--root", str(root)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "config" in result.stdout and "secrets removed" in result.stdout
    for secret in (PASSPHRASE, MQTT_PASSWORD, API_KEY):
        assert secret not in result.stdout + result.stderr


def test_a_boot_file_turning_the_console_on_makes_its_tokens(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    provision(write_boot(boot, BOOT + "\n[console]\nenabled = true\ntranscripts = true\n"), root)
    state = root / "var/lib/edgevoice"
    tokens = [(state / name).read_text().strip() for name in ("console-token", "console-captions-token")]
    assert all(len(t) >= 40 for t in tokens) and tokens[0] != tokens[1]
    assert stat.S_IMODE((state / "console-token").stat().st_mode) == 0o600
    assert load_config(root / "etc/edgevoice/config.toml").config.console.transcripts


def test_without_the_console_no_token_is_made(tmp_path: Path) -> None:
    root, boot = make_root(tmp_path)
    provision(write_boot(boot), root)
    assert not (root / "var/lib/edgevoice/console-token").exists()
