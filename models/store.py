"""The models folder on disk: where it is, what is installed there, and the pins file.

Layout of ``<models dir>``::

    <name>/                      one folder per installed model (renamed into place whole)
    <name>/.edgevoice-model.json what was installed: kind, engine, sources and their sha256,
                                 every file with its size and sha256
    pins.json                    sha256 of each downloaded file, recorded on first fetch
    manifest.json                optional: the device's own extra manifest entries
    .downloads/                  resumable ``.part`` files of downloads in progress
    .staging-*/                  temporary unpack folders (removed on success or failure)
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgevoice.models.errors import ModelStorageError
from edgevoice.models.location import ModelKind, ModelLocation, ModelSource

_LOGGER = logging.getLogger(__name__)

ENV_MODELS_DIR = "EDGEVOICE_MODELS_DIR"
SYSTEM_MODELS_DIR = Path("/var/lib/edgevoice/models")
USER_MODELS_DIR = Path("~/.local/share/edgevoice/models")
METADATA_FILE = ".edgevoice-model.json"
PINS_FILE = "pins.json"
DOWNLOADS_DIR = ".downloads"
STAGING_PREFIX = ".staging-"


def default_models_dir() -> Path:
    """``$EDGEVOICE_MODELS_DIR``; else ``/var/lib/edgevoice/models`` when this user can
    write it (or create it); else ``~/.local/share/edgevoice/models``."""
    env = os.environ.get(ENV_MODELS_DIR, "").strip()
    if env:
        return Path(env).expanduser()
    if _writable_or_creatable(SYSTEM_MODELS_DIR):
        return SYSTEM_MODELS_DIR
    return USER_MODELS_DIR.expanduser()


def models_dir_or_default(models_dir: str | Path | None) -> Path:
    if models_dir is None or str(models_dir) == "":
        return default_models_dir()
    return Path(models_dir).expanduser()


def _writable_or_creatable(path: Path) -> bool:
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


@dataclass(frozen=True, slots=True)
class InstalledModel:
    """A model fetched into the models folder, as its metadata file describes it."""

    name: str
    kind: ModelKind
    engine: str
    language: str | None
    folder: Path
    entry: str
    metadata: dict[str, Any]

    @property
    def location(self) -> ModelLocation:
        path = self.folder if self.entry == "." else self.folder / self.entry
        return ModelLocation(
            name=self.name,
            kind=self.kind,
            path=path,
            source=ModelSource.INSTALLED,
            engine=self.engine,
            language=self.language,
        )

    @property
    def files(self) -> dict[str, dict[str, Any]]:
        files = self.metadata.get("files", {})
        return files if isinstance(files, dict) else {}

    @property
    def sources(self) -> list[dict[str, Any]]:
        sources = self.metadata.get("sources", [])
        return sources if isinstance(sources, list) else []


def read_installed(folder: Path) -> InstalledModel | None:
    """The installed model in ``folder``, or ``None`` when it has no readable metadata."""
    meta_path = folder / METADATA_FILE
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        return InstalledModel(
            name=str(meta["name"]),
            kind=ModelKind(meta["kind"]),
            engine=str(meta["engine"]),
            language=meta.get("language") or None,
            folder=folder,
            entry=str(meta.get("entry", ".")),
            metadata=meta,
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as err:
        _LOGGER.warning("ignoring %s: unreadable model metadata (%s)", meta_path, err)
        return None


def installed_models(models_dir: Path) -> list[InstalledModel]:
    """Models installed in ``models_dir``, by name."""
    if not models_dir.is_dir():
        return []
    found = []
    try:
        children = sorted(models_dir.iterdir())
    except OSError as err:
        _LOGGER.warning("cannot list the models folder %s: %s", models_dir, err)
        return []
    for child in children:
        if child.name.startswith(".") or not child.is_dir():
            continue
        model = read_installed(child)
        if model is not None:
            found.append(model)
    return found


def find_installed(models_dir: Path, name: str) -> InstalledModel | None:
    folder = models_dir / name
    if folder.is_dir():
        model = read_installed(folder)
        if model is not None:
            return model
    for model in installed_models(models_dir):
        if name == model.name or name in model.metadata.get("aliases", []):
            return model
    return None


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON through a temporary file and a rename, so readers never see half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise storage_error(err, path) from err


def read_pins(models_dir: Path) -> dict[str, dict[str, str]]:
    """``{model name: {file name: sha256}}`` recorded by earlier fetches."""
    path = models_dir / PINS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise ModelStorageError(
            f"cannot read the model pins file {path} ({err}); fix or delete it (deleting it "
            "forgets the hashes trusted on first use)"
        ) from err
    pins: dict[str, dict[str, str]] = {}
    if isinstance(data, dict):
        for model, files in data.items():
            if isinstance(files, dict):
                pins[str(model)] = {str(k): str(v) for k, v in files.items()}
    return pins


def record_pin(models_dir: Path, model: str, filename: str, sha256: str) -> None:
    pins = read_pins(models_dir)
    pins.setdefault(model, {})[filename] = sha256
    write_json_atomic(models_dir / PINS_FILE, pins)


def storage_error(err: OSError, where: Path) -> ModelStorageError:
    """A clear message for the file-system errors a fetch can meet."""
    import errno

    if err.errno == errno.ENOSPC:
        return ModelStorageError(
            f"no space left on the device while writing {where}. Free some space, or put the "
            f"models on a bigger disk with [models] dir or ${ENV_MODELS_DIR}, then fetch again.",
            reason=err.errno,
        )
    if err.errno in (errno.EACCES, errno.EPERM):
        return ModelStorageError(
            f"permission denied writing {where}. Run as a user who may write there (the "
            f"edgevoice service user, or root), or choose another folder with [models] dir or "
            f"${ENV_MODELS_DIR}.",
            reason=err.errno,
        )
    if err.errno == errno.EROFS:
        return ModelStorageError(
            f"{where} is on a read-only file system. Choose a writable folder with [models] dir "
            f"or ${ENV_MODELS_DIR}.",
            reason=err.errno,
        )
    return ModelStorageError(f"cannot write {where}: {err.strerror or err}", reason=err.errno or 0)
