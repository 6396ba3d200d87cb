"""Change the config file from a patch: validated first, written atomically.

A patch is a table of sections like the file's own (``{"audio": {"volume": 0.5}}``);
a ``None`` value removes the key from the file (back to its default). The patched file
is validated with the same rules as at load time (:func:`build_config` over the
layers below the file, the patched file and the layers above it), so a patch that
would make the next start fail is refused and nothing is written.

The new file is written to a temporary file in the same folder, flushed and fsynced,
then renamed over the old one (and the folder fsynced): after a power cut the file is
either the old one or the new one, never half of either.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgevoice.device.config.fields import check_of
from edgevoice.device.config.loader import (
    ConfigError,
    ConfigProblem,
    build_config,
    read_toml,
    revision,
    to_toml,
)
from edgevoice.device.config.schema import Config

_LOGGER = logging.getLogger(__name__)

Layers = Sequence[tuple[str, Mapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class PatchResult:
    """What a patch did."""

    config: Config
    # Dotted keys whose effective value changed.
    changed: tuple[str, ...]
    # The changed keys that only take effect after a restart.
    restart_keys: tuple[str, ...]
    revision: str

    @property
    def restart_required(self) -> bool:
        return bool(self.restart_keys)

    def as_dict(self) -> dict[str, Any]:
        return {
            "changed": list(self.changed),
            "restart_required": self.restart_required,
            "restart_keys": list(self.restart_keys),
            "revision": self.revision,
        }


def apply_patch_to_raw(raw: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """The file's tables with the patch merged in; ``None`` deletes a key."""
    out: dict[str, Any] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in raw.items()}
    for name, value in patch.items():
        if value is None:
            out.pop(name, None)
        elif isinstance(value, Mapping) and isinstance(out.get(name), Mapping | None):
            table = dict(out.get(name) or {})
            for key, item in value.items():
                if item is None:
                    table.pop(key, None)
                else:
                    table[key] = item
            if table:
                out[name] = table
            else:
                out.pop(name, None)
        else:
            out[name] = value
    return out


def _flatten(config: Any, prefix: str = "") -> dict[str, tuple[Any, bool]]:
    """dotted key → (value, restart flag)."""
    out: dict[str, tuple[Any, bool]] = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        key = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(value):
            out.update(_flatten(value, key + "."))
        else:
            check = check_of(field)
            out[key] = (value, bool(check and check.restart))
    return out


def diff(old: Config, new: Config) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(changed keys, changed keys that need a restart)."""
    before = _flatten(old)
    after = _flatten(new)
    changed = tuple(k for k in after if before[k][0] != after[k][0])
    return changed, tuple(k for k in changed if after[k][1])


def validate_patch(
    path: Path,
    patch: Mapping[str, Any],
    *,
    below: Layers = (),
    above: Layers = (),
) -> tuple[dict[str, Any], PatchResult]:
    """The patched file's tables and what they change; raises :class:`ConfigError`."""
    if not isinstance(patch, Mapping):
        raise ConfigError([ConfigProblem("patch", "", "expected a table of sections")])
    current = read_toml(path) if path.exists() else {}
    old = build_config([*below, (str(path), current), *above])
    new_raw = apply_patch_to_raw(current, patch)
    new = build_config([*below, (f"{path} (patched)", new_raw), *above])
    changed, restart_keys = diff(old, new)
    return new_raw, PatchResult(new, changed, restart_keys, revision(new))


def write_atomically(path: Path, text: str, *, mode: int = 0o600) -> None:
    """Replace ``path`` with ``text`` so that a crash leaves the old or the new file."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        pass
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some file systems cannot fsync a folder; the rename is still atomic
    finally:
        os.close(dir_fd)


def persist_patch(
    path: Path | str,
    patch: Mapping[str, Any],
    *,
    below: Layers = (),
    above: Layers = (),
) -> PatchResult:
    """Validate ``patch`` against ``path`` and write the result atomically.

    ``below``/``above`` are the other config layers (e.g. the system file below a
    user file, ``--set`` overrides above), so validation sees the effective config.
    Raises :class:`ConfigError` (nothing written) when the result would not load.
    """
    target = Path(path)
    new_raw, result = validate_patch(target, patch, below=below, above=above)
    if result.changed or not target.exists():
        write_atomically(target, to_toml(new_raw) if new_raw else "")
        _LOGGER.info(
            "config %s updated (%d key(s) changed%s)",
            target,
            len(result.changed),
            ", restart needed" if result.restart_required else "",
        )
    return result
