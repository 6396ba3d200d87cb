"""What the package reads at run time comes from inside the package, wherever it is installed.

These run in the default suite (against the editable install) and, marked ``installed``,
against the built wheel in a fresh venv outside the checkout (``image/board/installed.py``
and ``./dev board``), where no source tree is there to fall back on.
"""

from __future__ import annotations

import importlib.metadata
import os
import tomllib
from pathlib import Path

import pytest

import edgevoice
from edgevoice.device.hardware import presets
from edgevoice.models.manifest import shipped_manifest

pytestmark = pytest.mark.installed

EXPECTED_PREFIX = os.environ.get("EDGEVOICE_EXPECT_PREFIX")


@pytest.mark.skipif(not EXPECTED_PREFIX, reason="only under the installed-package check")
def test_edgevoice_comes_from_the_installed_venv() -> None:
    assert EXPECTED_PREFIX is not None
    package = Path(edgevoice.__file__).resolve()
    assert package.is_relative_to(Path(EXPECTED_PREFIX).resolve()), package
    assert "site-packages" in package.parts
    # the distribution's own record names this file: a wheel install, not a path hook
    dist = importlib.metadata.distribution("edgevoice")
    assert Path(str(dist.locate_file("edgevoice/__init__.py"))).resolve() == package
    assert "editable" not in (dist.read_text("direct_url.json") or "")


def test_every_profile_preset_names_pcms_its_shipped_alsa_configs_define() -> None:
    names = presets.profile_names()
    assert {"respeaker-2mic", "respeaker-4mic", "usb-mic-hdmi"} <= set(names)
    defined = {line.split()[0].removeprefix("pcm.") for text in presets.alsa_configs().values()
               for line in text.splitlines() if line.startswith("pcm.")}
    for name in names:
        preset = presets.profile_preset(name)
        assert preset is not None
        audio = tomllib.loads(preset.read_text(encoding="utf-8"))["audio"]
        for key in ("capture_device", "playback_device"):
            assert audio[key] in defined, (name, key, audio[key])


def test_the_model_manifest_ships_with_the_package() -> None:
    manifest = shipped_manifest()
    assert "vosk-model-small-en-us-0.15" in {entry.name for entry in manifest.entries}
