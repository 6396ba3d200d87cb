"""Hardware presets shipped inside the package: profile configs and their ALSA PCMs.

``profiles/<name>.toml`` is the config fragment for one supported board or array;
``alsa/*.conf`` are the ALSA PCMs those fragments name (installed to
``/etc/alsa/conf.d`` by the image). They are package data, read through
:mod:`importlib.resources`, so an installed wheel finds them exactly as a source
checkout does.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

_PACKAGE = "edgevoice.device.hardware.presets"


def _folder(name: str) -> Traversable:
    return resources.files(_PACKAGE).joinpath(name)


def profile_names() -> list[str]:
    """Every shipped profile preset, sorted."""
    return sorted(entry.name.removesuffix(".toml") for entry in _folder("profiles").iterdir()
                  if entry.name.endswith(".toml"))


def profile_preset(name: str) -> Traversable | None:
    """The preset file of profile ``name``, or None when no such preset ships."""
    candidate = _folder("profiles").joinpath(f"{name}.toml")
    return candidate if candidate.is_file() else None


def alsa_configs() -> dict[str, str]:
    """File name → text of every shipped ALSA config."""
    return {entry.name: entry.read_text(encoding="utf-8")
            for entry in sorted(_folder("alsa").iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".conf")}
