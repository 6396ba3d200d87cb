from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgevoice.device.config.schema import DeviceConfig
from edgevoice.device.identity import (
    IdentityError,
    IdentitySource,
    board_serial,
    ensure_identity,
    identity_path,
    load_identity,
)

MID = "0123456789abcdef0123456789abcdef"


def put(root: Path, rel: str, text: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def test_devicetree_serial_wins_over_cpuinfo_and_machine_id(tmp_path: Path) -> None:
    put(tmp_path, "sys/firmware/devicetree/base/serial-number", b"00000000c0ffee42\x00")
    put(tmp_path, "proc/cpuinfo", "Serial\t\t: 10000000deadbeef\n")
    put(tmp_path, "etc/machine-id", MID + "\n")
    ident = load_identity(DeviceConfig(), root=tmp_path)
    assert ident.device_id == "ev-c0ffee42"
    assert ident.source is IdentitySource.SERIAL


def test_cpuinfo_serial_line(tmp_path: Path) -> None:
    put(tmp_path, "proc/cpuinfo", "processor\t: 0\nHardware\t: BCM2835\nSerial\t\t: 10000000DEADBEEF\n")
    assert board_serial(tmp_path) == "10000000deadbeef"
    assert load_identity(DeviceConfig(), root=tmp_path).device_id == "ev-10000000deadbeef"


def test_machine_id_is_hashed_and_persisted_then_stable(tmp_path: Path) -> None:
    put(tmp_path, "etc/machine-id", MID + "\n")
    first = load_identity(DeviceConfig(), root=tmp_path)
    assert first.source is IdentitySource.MACHINE_ID
    assert MID not in first.device_id and first.device_id.startswith("ev-")
    assert first.persisted
    stored = json.loads(identity_path(DeviceConfig(), tmp_path).read_text())
    assert stored["device_id"] == first.device_id
    # A new machine-id later does not change the persisted identity.
    put(tmp_path, "etc/machine-id", "f" * 32 + "\n")
    again = load_identity(DeviceConfig(), root=tmp_path)
    assert again.device_id == first.device_id
    assert again.created == first.created


def test_config_id_overrides_and_is_not_persisted(tmp_path: Path) -> None:
    put(tmp_path, "etc/machine-id", MID)
    ident = load_identity(DeviceConfig(id="kitchen-1"), root=tmp_path)
    assert ident.device_id == "kitchen-1" and ident.source is IdentitySource.CONFIG
    assert not identity_path(DeviceConfig(), tmp_path).exists()


def test_topic_unsafe_config_id_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(IdentityError, match="MQTT"):
        load_identity(DeviceConfig(id="a/b#"), root=tmp_path)


def test_nothing_to_derive_from_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(IdentityError, match=r"\[device\] id"):
        load_identity(DeviceConfig(), root=tmp_path)


def test_state_dir_is_taken_from_config(tmp_path: Path) -> None:
    put(tmp_path, "etc/machine-id", MID)
    cfg = DeviceConfig(state_dir="/srv/ev")
    ident, created = ensure_identity(cfg, tmp_path)
    assert created and (tmp_path / "srv/ev/identity.json").is_file()
    again, created_again = ensure_identity(cfg, tmp_path)
    assert again == ident and not created_again


def test_damaged_identity_file_is_a_clear_error(tmp_path: Path) -> None:
    put(tmp_path, "var/lib/edgevoice/identity.json", "{not json")
    with pytest.raises(IdentityError, match="delete the file"):
        load_identity(DeviceConfig(), root=tmp_path)
