"""The built wheel carries every module and data file of the tree.

A device installs the wheel, not the checkout: a subpackage or data file that is in the
tree but not in the wheel works in every editable test run and fails on every Pi. This
builds the real wheel (pip, setuptools, the same backend a device's pip uses) and
compares its file list with the tree's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Files that are the package's at run time: code, typing marker and the data patterns
# pyproject's package-data names. Anything else in a code folder (a C source, a README)
# is not expected in the wheel.
RUNTIME_SUFFIXES = {".py", ".pyi", ".json", ".toml", ".wav", ".conf", ".html", ".css", ".js"}


def _package_dirs() -> dict[str, str]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        mapping: dict[str, str] = tomllib.load(handle)["tool"]["setuptools"]["package-dir"]
    return mapping


def expected_wheel_files() -> set[str]:
    expected: set[str] = set()
    for package, folder in _package_dirs().items():
        base = REPO / folder
        prefix = package.replace(".", "/")
        for path in base.rglob("*"):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            if path.suffix in RUNTIME_SUFFIXES or path.name == "py.typed":
                expected.add(f"{prefix}/{path.relative_to(base).as_posix()}")
    return expected


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("EDGEVOICE_WHEEL")
    if given:
        # ./dev test built it from a clean copy of this tree a moment ago (image/board/installed.py)
        # and installed it; check that very wheel rather than build a second one
        assert Path(given).is_file(), f"EDGEVOICE_WHEEL={given} does not exist"
        return Path(given)
    out = tmp_path_factory.mktemp("wheel")
    # pip builds in the source folder, and setuptools' build/lib keeps files from earlier
    # builds: build from a clean copy so a stale file cannot stand in for a missing one.
    source = tmp_path_factory.mktemp("src") / "edgevoice"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "out", "__pycache__", "*.so", "*.egg-info", ".mypy_cache", ".ruff_cache"))
    # --no-build-isolation: the dev venv has setuptools>=68, and the build needs nothing else
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(out), str(source)],
        capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    wheels = list(out.glob("edgevoice-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_every_module_and_data_file_is_in_the_wheel(built_wheel: Path) -> None:
    names = set(zipfile.ZipFile(built_wheel).namelist())
    missing = sorted(expected_wheel_files() - names)
    assert not missing, f"in the tree but not in the wheel: {missing}"


def test_the_daemon_and_the_presets_are_in_the_wheel(built_wheel: Path) -> None:
    # the two things an installed wheel lacked before discovery: the runtime package
    # (``edgevoice run``) and the profile presets that lived beside the image scripts
    names = set(zipfile.ZipFile(built_wheel).namelist())
    assert "edgevoice/device/runtime/daemon.py" in names
    assert "edgevoice/device/hardware/presets/profiles/respeaker-4mic.toml" in names
    assert "edgevoice/device/hardware/presets/alsa/62-edgevoice-respeaker-4mic.conf" in names
    assert "edgevoice/models/manifest.json" in names


def test_the_echo_canceller_kernel_is_compiled_into_the_wheel(built_wheel: Path) -> None:
    names = zipfile.ZipFile(built_wheel).namelist()
    assert any(name.startswith("edgevoice/audio/aec/_kernel") and name.endswith(".so") for name in names)


def test_the_audio_period_loop_is_compiled_into_the_wheel(built_wheel: Path) -> None:
    names = zipfile.ZipFile(built_wheel).namelist()
    assert any(name.startswith("edgevoice/audio/io/_rtloop") and name.endswith(".so") for name in names)
    assert "edgevoice/audio/io/_rtloop.pyi" in names


def test_the_expected_list_sees_a_missing_subpackage(tmp_path: Path) -> None:
    # the comparison itself must be able to fail: a wheel without the runtime package
    expected = expected_wheel_files()
    assert "edgevoice/device/runtime/daemon.py" in expected
    assert "edgevoice/device/hardware/presets/profiles/respeaker-4mic.toml" in expected
    pruned = {name for name in expected if not name.startswith("edgevoice/device/runtime/")}
    assert expected - pruned
