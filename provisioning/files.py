"""Atomic, idempotent file writes under a root prefix.

Every change provisioning makes is one :class:`FileChange`: the full new content (or a
symlink target), a mode and an owner. :func:`status_of` compares it with what is on disk
without touching anything; :func:`apply_change` writes a temporary file in the same
directory, fsyncs it, renames it over the target and fsyncs the directory, so a power cut
leaves the old file or the new one, never half of either. A change whose content, mode and
owner already match is not written at all (running twice changes nothing).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class ChangeStatus(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class Owner:
    uid: int
    gid: int
    name: str


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file (or symlink) to make exactly so. ``path`` is absolute inside the target root."""

    what: str
    path: str
    content: bytes = b""
    mode: int = 0o644
    owner: Owner | None = None  # None: whoever runs provisioning (root on a device)
    symlink: str | None = None  # when set, the path becomes a symlink to this target

    def target(self, root: Path) -> Path:
        return root / self.path.lstrip("/")


def running_as_root() -> bool:
    return os.geteuid() == 0


def status_of(change: FileChange, root: Path) -> ChangeStatus:
    """What :func:`apply_change` would do, read from the disk only."""
    path = change.target(root)
    if change.symlink is not None:
        if not path.is_symlink() and not path.exists():
            return ChangeStatus.CREATED
        if path.is_symlink() and os.readlink(path) == change.symlink:
            return ChangeStatus.UNCHANGED
        return ChangeStatus.UPDATED
    if path.is_symlink() or not path.is_file():
        return ChangeStatus.UPDATED if path.is_symlink() or path.exists() else ChangeStatus.CREATED
    info = path.stat()
    if (info.st_mode & 0o7777) != change.mode:
        return ChangeStatus.UPDATED
    if change.owner is not None and running_as_root() and (
        (info.st_uid, info.st_gid) != (change.owner.uid, change.owner.gid)
    ):
        return ChangeStatus.UPDATED
    return ChangeStatus.UNCHANGED if path.read_bytes() == change.content else ChangeStatus.UPDATED


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, content: bytes, mode: int, owner: Owner | None = None) -> None:
    """temp file in the same directory → chmod/chown → fsync → rename → fsync the directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # Mode and owner are set before any byte is written, so a secret is never readable
        # by others, not even for a moment.
        os.fchmod(fd, mode)
        if owner is not None and running_as_root():
            os.fchown(fd, owner.uid, owner.gid)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_symlink(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    os.symlink(target, tmp)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def apply_change(change: FileChange, root: Path) -> ChangeStatus:
    status = status_of(change, root)
    if status is ChangeStatus.UNCHANGED:
        return status
    path = change.target(root)
    if change.symlink is not None:
        atomic_symlink(path, change.symlink)
    else:
        atomic_write(path, change.content, change.mode, change.owner)
    return status


def _lookup(table: Path, name: str) -> list[str] | None:
    try:
        lines = table.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(":")
        if fields and fields[0] == name:
            return fields
    return None


def find_user(root: Path, name: str) -> Owner | None:
    """The user ``name`` from ``<root>/etc/passwd`` (not the host's), with its primary group."""
    fields = _lookup(root / "etc" / "passwd", name)
    if fields is None or len(fields) < 4:
        return None
    try:
        return Owner(int(fields[2]), int(fields[3]), name)
    except ValueError:
        return None
