"""Fetch a model by name: download, check, unpack, and rename into place atomically.

Everything happens inside the models folder so the final ``rename`` stays on one
file system: downloads go to ``.downloads/<model>--<file>.part`` (resumable),
unpacking to a ``.staging-*`` folder that becomes ``<name>/`` in one rename.
An interrupted or corrupt fetch therefore leaves no ``<name>/`` folder behind.
"""

from __future__ import annotations

import datetime as dt
import errno
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgevoice import __version__
from edgevoice.models.bundled import find_bundled
from edgevoice.models.download import DownloadPolicy, download, sha256_file
from edgevoice.models.errors import (
    ModelArchiveError,
    ModelChecksumError,
    ModelNotFoundError,
    ModelStorageError,
)
from edgevoice.models.location import ModelLocation
from edgevoice.models.manifest import Manifest, ManifestEntry, ModelSourceFile, load_manifest
from edgevoice.models.progress import FetchPhase, FetchProgress, ProgressCallback
from edgevoice.models.store import (
    DOWNLOADS_DIR,
    ENV_MODELS_DIR,
    METADATA_FILE,
    PINS_FILE,
    STAGING_PREFIX,
    find_installed,
    models_dir_or_default,
    read_pins,
    record_pin,
    storage_error,
    write_json_atomic,
)

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Downloaded:
    source: ModelSourceFile
    part: Path
    sha256: str
    origin: str  # "manifest" | "pinned" | "tofu"


def part_path(models_dir: Path, model: str, source: ModelSourceFile) -> Path:
    return models_dir / DOWNLOADS_DIR / f"{model}--{source.saved_name}.part"


def fetch_model(
    name: str,
    models_dir: str | Path | None = None,
    progress: ProgressCallback | None = None,
    *,
    force: bool = False,
    manifest: Manifest | None = None,
    policy: DownloadPolicy | None = None,
) -> ModelLocation:
    """Fetch model ``name`` into the models folder and return where it is (blocking).

    Already installed: returned as is (``force`` fetches it again). A model that an
    installed package bundles and the manifest does not list is returned without
    fetching. Raises :class:`ModelNotFoundError` for an unknown name,
    :class:`ModelDownloadError`, :class:`ModelChecksumError`,
    :class:`ModelArchiveError` or :class:`ModelStorageError`; on any of them the
    models folder holds no trace of the model except a resumable ``.part`` file.
    """
    folder = models_dir_or_default(models_dir)
    manifest = manifest if manifest is not None else load_manifest(folder)
    entry = manifest.get(name)
    if entry is None:
        bundled = find_bundled(name)
        if bundled is not None and bundled[1] is not None:
            _LOGGER.info("model %s comes with the package %s; nothing to fetch", name,
                         bundled[0].distribution)
            return bundled[1]
        raise ModelNotFoundError(
            f"model {name!r} is not in the manifest, so it cannot be fetched. "
            "`edgevoice models list` shows the models that can be."
        )
    existing = find_installed(folder, entry.name)
    if existing is not None and not force:
        _LOGGER.info("model %s is already installed in %s", entry.name, existing.folder)
        return existing.location

    _make_dir(folder / DOWNLOADS_DIR)
    _check_free_space(folder, entry)
    pins = read_pins(folder).get(entry.name, {})
    try:
        downloaded = [_fetch_source(entry, s, folder, pins, progress=progress, policy=policy)
                      for s in entry.sources]
        location = _install(entry, downloaded, folder, progress)
    except ModelStorageError as err:
        if err.reason == errno.ENOSPC:
            # Give the space back: a full disk is worse than downloading again.
            for source in entry.sources:
                part_path(folder, entry.name, source).unlink(missing_ok=True)
        raise
    for item in downloaded:
        if item.origin == "tofu":
            record_pin(folder, entry.name, item.source.saved_name, item.sha256)
            _LOGGER.warning(
                "TRUST ON FIRST USE: %s of model %s had no known sha256; recorded %s in %s. "
                "Later fetches and `edgevoice models verify` hold it to this hash. Compare it with "
                "a trusted copy if you can.",
                item.source.saved_name, entry.name, item.sha256, folder / PINS_FILE,
            )
    return location


def _fetch_source(
    entry: ManifestEntry,
    source: ModelSourceFile,
    folder: Path,
    pins: dict[str, str],
    *,
    progress: ProgressCallback | None,
    policy: DownloadPolicy | None,
) -> _Downloaded:
    part = part_path(folder, entry.name, source)
    digest = download(
        source.url, part, model=entry.name, label=source.saved_name,
        expected_size=source.size, progress=progress, policy=policy,
    )
    if source.sha256:
        expected, origin = source.sha256, "manifest"
    elif source.saved_name in pins:
        expected, origin = pins[source.saved_name], "pinned"
    else:
        expected, origin = "", "tofu"
    if expected and digest != expected:
        part.unlink(missing_ok=True)
        where = "the manifest" if origin == "manifest" else f"the hash pinned in {folder / PINS_FILE}"
        raise ModelChecksumError(
            f"{source.saved_name} of model {entry.name} has sha256 {digest}, but {where} says "
            f"{expected}. Nothing was installed and the download was deleted. If the publisher "
            f"changed the file on purpose, update the manifest or remove the pin; otherwise "
            "the download was corrupted or tampered with: fetch again later."
        )
    return _Downloaded(source, part, digest, origin)


def _install(
    entry: ManifestEntry,
    downloaded: list[_Downloaded],
    folder: Path,
    progress: ProgressCallback | None,
) -> ModelLocation:
    from edgevoice.models.unpack import unpack

    try:
        staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{entry.name}-", dir=folder))
    except OSError as err:
        raise storage_error(err, folder) from err
    target = folder / entry.name
    try:
        content = staging / "model"
        for i, item in enumerate(downloaded):
            unpack(item.source, item.part, staging / f"unpack{i}", content,
                   model=entry.name, progress=progress)
        missing = [f for f in entry.files if not (content / f).exists()]
        if entry.entry != "." and not (content / entry.entry).exists():
            missing.append(entry.entry)
        if missing:
            raise ModelArchiveError(
                f"model {entry.name} lacks {', '.join(missing)} after unpacking; the download does "
                "not match the manifest entry. Nothing was installed."
            )
        (content / METADATA_FILE).write_text("{}", encoding="utf-8")  # fail early on a full disk
        write_json_atomic(content / METADATA_FILE, _metadata(entry, downloaded, content, progress))
        _swap_in(content, target, staging / "previous")
    except OSError as err:
        raise storage_error(err, folder) from err
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for item in downloaded:
        item.part.unlink(missing_ok=True)
    _LOGGER.info("installed model %s in %s", entry.name, target)
    installed = find_installed(folder, entry.name)
    if installed is None:  # pragma: no cover - we just wrote its metadata
        raise ModelArchiveError(f"model {entry.name} vanished from {target} right after installing")
    return installed.location


def _swap_in(content: Path, target: Path, previous: Path) -> None:
    """Put ``content`` at ``target``; an installed model there moves to ``previous``
    (inside the staging folder, removed afterwards) and is put back if the new one
    cannot take its place, so a failed ``fetch --force`` keeps the old model."""
    had_previous = target.exists()
    if had_previous:
        os.rename(target, previous)
    try:
        os.rename(content, target)
    except OSError:
        if had_previous:
            try:
                os.rename(previous, target)
            except OSError as restore_err:  # pragma: no cover - both renames in one folder
                kept = target.with_name(f"{target.name}.previous")
                _LOGGER.error("could not put the previous %s back (%s); it is kept as %s",
                              target.name, restore_err, kept)
                os.rename(previous, kept)  # out of the staging folder, which is removed
        raise


def _metadata(
    entry: ManifestEntry,
    downloaded: list[_Downloaded],
    content: Path,
    progress: ProgressCallback | None,
) -> dict[str, Any]:
    paths = sorted(p for p in content.rglob("*") if p.is_file() and p.name != METADATA_FILE)
    files: dict[str, dict[str, Any]] = {}
    for i, path in enumerate(paths, 1):
        rel = path.relative_to(content).as_posix()
        files[rel] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
        if progress is not None:
            progress(FetchProgress(entry.name, entry.name, FetchPhase.VERIFY, i, len(paths)))
    return {
        "name": entry.name,
        "kind": str(entry.kind),
        "engine": entry.engine,
        "language": entry.language,
        "entry": entry.entry,
        "aliases": list(entry.aliases),
        "licence": entry.licence,
        "installed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "edgevoice_version": __version__,
        "sources": [
            {
                "url": d.source.url,
                "filename": d.source.saved_name,
                "archive": str(d.source.archive),
                "sha256": d.sha256,
                "hash_origin": d.origin,
            }
            for d in downloaded
        ],
        "files": files,
    }


def _make_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
    except OSError as err:
        raise storage_error(err, path) from err


def _check_free_space(folder: Path, entry: ManifestEntry) -> None:
    """Refuse early when the download alone cannot fit (sizes may be approximate)."""
    size = entry.download_size
    if size is None:
        return
    pending = sum(
        p.stat().st_size for s in entry.sources if (p := part_path(folder, entry.name, s)).exists()
    )
    free = shutil.disk_usage(folder).free
    if size - pending > free:
        raise ModelStorageError(
            f"model {entry.name} needs about {size / 1e6:.1f} MB to download but {folder} has "
            f"{free / 1e6:.1f} MB free. Free some space, or put the models on a bigger disk with "
            f"[models] dir or ${ENV_MODELS_DIR}, then fetch again."
        )
