"""image/install-into-root.sh against a scratch root: the manifest, the user, units, --version."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from edgevoice.device.config import load_config

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "image/install-into-root.sh"


def ids(root: Path, table: str) -> dict[str, int]:
    out = {}
    for line in (root / "etc" / table).read_text().splitlines():
        fields = line.split(":")
        out[fields[0]] = int(fields[2])
    return out


def check_root(root: Path) -> None:
    users, groups = ids(root, "passwd"), ids(root, "group")
    assert "edgevoice" in users
    members = {line.split(":")[0]: line.split(":")[3].split(",")
               for line in (root / "etc/group").read_text().splitlines()}
    for group in ("audio", "gpio", "spi"):
        assert "edgevoice" in members[group], group
    for line in (REPO / "image/manifest.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        rel, kind, mode, owner = line.split("\t")
        path = root / rel.lstrip("/")
        info = path.lstat()
        if kind == "link":
            assert stat.S_ISLNK(info.st_mode), rel
            continue
        assert (stat.S_ISDIR if kind == "dir" else stat.S_ISREG)(info.st_mode), rel
        assert stat.S_IMODE(info.st_mode) == int(mode, 8), (rel, oct(info.st_mode))
        if os.geteuid() == 0:
            user, group = owner.split(":")
            want = (0 if user == "root" else users[user], 0 if group == "root" else groups[group])
            assert (info.st_uid, info.st_gid) == want, rel
    # The enabled units point at the installed ones; the default config is a valid config.
    wants = root / "etc/systemd/system/multi-user.target.wants/edgevoice.service"
    assert os.readlink(wants) == "/etc/systemd/system/edgevoice.service"
    load_config(root / "etc/edgevoice/config.toml")
    version = subprocess.run([str(root / "opt/edgevoice/bin/edgevoice"), "--version"],
                             capture_output=True, text=True, check=False, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("edgevoice "), version.stderr


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["bash", str(SCRIPT), "--root", str(root), "--python", sys.executable, *args],
                            capture_output=True, text=True, check=False, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_install_into_scratch_root_fast(tmp_path: Path) -> None:
    """edgevoice alone (--no-deps) with this venv's packages visible: the same script, fast."""
    root = tmp_path / "root"
    run(root, "--extras", "", "--pip-args", "--no-deps", "--profile", "respeaker-usb-v2",
        "--deps-from", sysconfig.get_paths()["purelib"])
    check_root(root)
    config = load_config(root / "etc/edgevoice/config.toml").config
    assert config.audio.capture_channels == 6 and config.audio.reference_channel == 5
    # Running it again keeps the user, the config and the manifest as they were.
    passwd = (root / "etc/passwd").read_text()
    run(root, "--extras", "", "--pip-args", "--no-deps", "--deps-from", sysconfig.get_paths()["purelib"])
    assert (root / "etc/passwd").read_text() == passwd
    check_root(root)


@pytest.mark.slow
def test_install_into_scratch_root_with_dependencies(tmp_path: Path) -> None:
    """The real thing minus the extras: edgevoice and its core dependencies from PyPI."""
    root = tmp_path / "root"
    run(root, "--extras", "")
    check_root(root)


def test_bad_profile_is_refused_before_anything(tmp_path: Path) -> None:
    result = subprocess.run(["bash", str(SCRIPT), "--root", str(tmp_path / "r"), "--profile", "nope"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "no profile nope" in result.stderr
    assert not (tmp_path / "r/etc").exists()
