"""The kiosk profile (image/kiosk): its unit verifies with no warning, the install on a
scratch root makes what its manifest lists and turns the console on, and the launcher
opens /captions logged in with the read-only token from systemd's credential."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from edgevoice.device.config import load_config

REPO = Path(__file__).resolve().parents[2]
KIOSK = REPO / "image" / "kiosk"

needs_systemd = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze")


@needs_systemd
def test_the_kiosk_unit_verifies_without_any_warning(tmp_path: Path) -> None:
    exe = tmp_path / "opt/edgevoice/bin/edgevoice-kiosk"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    unit = tmp_path / "edgevoice-kiosk.service"
    unit.write_text((KIOSK / "edgevoice-kiosk.service").read_text()
                    .replace("ExecStart=/opt/", f"ExecStart={tmp_path}/opt/"))
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0 and result.stderr == "", result.stderr


def _scratch_root(tmp_path: Path, config: str = "[audio]\nvolume = 0.6\n") -> Path:
    root = tmp_path / "root"
    (root / "etc/edgevoice").mkdir(parents=True)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\nedgevoice:x:999:999::/:/x\n")
    (root / "etc/group").write_text("root:x:0:\nedgevoice:x:999:\nvideo:x:44:\n")
    (root / "etc/edgevoice/config.toml").write_text(config)
    return root


def test_install_makes_the_manifest_adds_the_user_and_turns_the_console_on(tmp_path: Path) -> None:
    root = _scratch_root(tmp_path)
    for _ in range(2):  # idempotent: a second run changes nothing
        result = subprocess.run(["bash", str(KIOSK / "install-kiosk.sh"), "--root", str(root)],
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
    for line in (KIOSK / "manifest.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        rel, kind, mode, _owner = line.split("\t")
        info = (root / rel.lstrip("/")).lstat()
        if kind == "link":
            assert stat.S_ISLNK(info.st_mode), rel
            continue
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == int(mode, 8), rel
    passwd = (root / "etc/passwd").read_text().splitlines()
    assert sum(line.startswith("kiosk:") for line in passwd) == 1
    groups = {fields[0]: fields[3] for fields in
              (line.split(":") for line in (root / "etc/group").read_text().splitlines())}
    assert all("kiosk" in groups[g].split(",") for g in ("video", "render", "input"))
    config = load_config(root / "etc/edgevoice/config.toml").config
    assert config.console.enabled and config.console.transcripts
    assert config.console.listen == "127.0.0.1:8080" and config.audio.volume == 0.6
    assert (root / "etc/edgevoice/config.toml").read_text().count("[console]") == 1


def test_install_leaves_an_existing_console_section_alone(tmp_path: Path) -> None:
    root = _scratch_root(tmp_path, '[console]\nenabled = true\nlisten = "127.0.0.1:9090"\n')
    subprocess.run(["bash", str(KIOSK / "install-kiosk.sh"), "--root", str(root)], check=True,
                   capture_output=True)
    assert load_config(root / "etc/edgevoice/config.toml").config.console.listen == "127.0.0.1:9090"


def _launcher(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("cage", "chromium"):
        (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / name).chmod(0o755)
    base = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "EDGEVOICE_KIOSK_DRY_RUN": "1"}
    return subprocess.run(["bash", str(KIOSK / "edgevoice-kiosk")], capture_output=True, text=True,
                          check=False, env={**base, **env})


def test_the_launcher_opens_captions_logged_in_with_the_captions_token(tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "captions-token").write_text("AbC-123_xyz\n")
    result = _launcher(tmp_path, CREDENTIALS_DIRECTORY=str(creds), EDGEVOICE_KIOSK_THEME="light",
                       EDGEVOICE_CONSOLE="http://127.0.0.1:9000/")
    assert result.returncode == 0, result.stderr
    argv = result.stdout.splitlines()
    assert argv[0].endswith("/cage") and argv[1:4] == ["-d", "-s", "--"]
    assert argv[4].endswith("/chromium") and "--kiosk" in argv
    assert argv[-1] == "http://127.0.0.1:9000/login?token=AbC-123_xyz&next=%2Fcaptions%3Ftheme%3Dlight"
    assert f"--user-data-dir={tmp_path}/chromium" in argv


def test_the_launcher_says_what_is_missing(tmp_path: Path) -> None:
    result = _launcher(tmp_path)
    assert result.returncode == 1 and "[console] enabled = true" in result.stderr
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "captions-token").write_text("bad token; rm -rf /\n")
    result = _launcher(tmp_path, CREDENTIALS_DIRECTORY=str(creds))
    assert result.returncode == 1 and "malformed" in result.stderr
    assert os.path.exists(tmp_path / "creds")
