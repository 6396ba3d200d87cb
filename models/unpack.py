"""Unpack a downloaded file into a staging folder, refusing paths that leave it."""

from __future__ import annotations

import logging
import os
import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from edgevoice.models.errors import ModelArchiveError
from edgevoice.models.manifest import ArchiveType, ModelSourceFile
from edgevoice.models.progress import FetchPhase, FetchProgress, ProgressCallback

_LOGGER = logging.getLogger(__name__)


def unpack(
    source: ModelSourceFile,
    downloaded: Path,
    work: Path,
    content: Path,
    *,
    model: str,
    progress: ProgressCallback | None = None,
) -> None:
    """Put what ``downloaded`` holds into ``content`` (the future model folder).

    Archives are extracted into ``work`` first; then the archive's ``root`` folder
    (or all of it) is moved into ``content``. A single file is moved in as is.
    OSErrors (disk full, permissions) propagate for the caller to explain.
    """
    content.mkdir(parents=True, exist_ok=True)
    if source.archive == ArchiveType.FILE:
        os.replace(downloaded, content / source.saved_name)
        return
    work.mkdir(parents=True, exist_ok=True)
    try:
        if source.archive == ArchiveType.ZIP:
            _unzip(downloaded, work, model, source.saved_name, progress)
        else:
            _untar(downloaded, work, model, source.saved_name, progress)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as err:
        raise ModelArchiveError(
            f"{source.saved_name} of model {model} is not a valid {source.archive} archive ({err}). "
            "The server sent something else; try the fetch again later."
        ) from err
    top = work / source.root if source.root else work
    if not top.is_dir():
        raise ModelArchiveError(
            f"{source.saved_name} of model {model} has no folder {source.root!r}; the manifest entry "
            "does not match the archive"
        )
    for child in top.iterdir():
        target = content / child.name
        if target.exists():
            raise ModelArchiveError(f"{child.name} of model {model} is provided twice by its sources")
        os.replace(child, target)
    shutil.rmtree(work, ignore_errors=True)


def _check_member(name: str, archive: str) -> None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise ModelArchiveError(f"{archive} contains a path outside its folder ({name!r}); refusing it")


def _unzip(path: Path, dest: Path, model: str, label: str, progress: ProgressCallback | None) -> None:
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        for member in members:
            _check_member(member.filename, label)
        for i, member in enumerate(members, 1):
            archive.extract(member, dest)
            if progress is not None:
                progress(FetchProgress(model, label, FetchPhase.UNPACK, i, len(members)))


def _untar(path: Path, dest: Path, model: str, label: str, progress: ProgressCallback | None) -> None:
    with tarfile.open(path, mode="r:gz") as archive:
        members = archive.getmembers()
        for member in members:
            _check_member(member.name, label)
        for i, member in enumerate(members, 1):
            # The "data" filter refuses links out of the folder, device files and setuid bits.
            archive.extract(member, dest, filter="data")
            if progress is not None:
                progress(FetchProgress(model, label, FetchPhase.UNPACK, i, len(members)))
