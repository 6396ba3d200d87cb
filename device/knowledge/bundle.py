"""A knowledge bundle for fleets: a tar (optionally gzipped) or zip of knowledge files.

``knowledge_sync {url, sha256}`` downloads it (resumable, hashed as it is written: the
model registry's downloader), refuses it unless its sha256 matches, unpacks it into
``bundles/<sha256>/`` beside the index after checking every member (plain files with
relative paths only, knowledge file types only, sizes bounded) and that every file
parses, builds the new index from it, and only then swaps: the index file by rename,
then ``bundle.json`` (which bundle is current) by rename. A bad bundle changes
nothing; a power cut leaves the old bundle and index or the new ones.
"""

from __future__ import annotations

import http.client
import io
import json
import logging
import os
import shutil
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from edgevoice.device.knowledge.chunking import SUFFIXES, chunk_file
from edgevoice.device.knowledge.errors import (
    BundleChecksumError,
    BundleDownloadError,
    BundleError,
    KnowledgeError,
)

_LOGGER = logging.getLogger(__name__)

POINTER = "bundle.json"
MAX_BUNDLE_BYTES = 64 * 1024 * 1024
MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BundleInfo:
    sha256: str
    folder: Path
    url: str
    files: int
    synced_at: float

    def as_dict(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "folder": str(self.folder), "url": self.url,
                "files": self.files, "synced_at": self.synced_at}


def current_bundle(state_dir: Path) -> BundleInfo | None:
    """The bundle ``bundle.json`` names, when its folder is there."""
    pointer = state_dir / POINTER
    try:
        data = json.loads(pointer.read_text(encoding="utf-8"))
        info = BundleInfo(str(data["sha256"]), Path(data["folder"]), str(data.get("url", "")),
                          int(data.get("files", 0)), float(data.get("synced_at", 0.0)))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as err:
        _LOGGER.warning("knowledge bundle pointer %s is unreadable (%s); no bundle is indexed", pointer, err)
        return None
    return info if info.folder.is_dir() else None


def normalise_sha256(value: str) -> str:
    digest = value.strip().lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise BundleError("sha256 must be 64 hexadecimal digits (sha256sum of the bundle file)")
    return digest


def fetch_bundle(url: str, sha256: str, state_dir: Path, *, timeout_s: float = 30.0) -> Path:
    """Download the bundle into ``state_dir/.download/`` and check it; return the file."""
    from edgevoice.models.download import DownloadPolicy, download
    from edgevoice.models.errors import ModelError

    if not url.startswith(("http://", "https://")):
        raise BundleError(f"the bundle URL must be http:// or https://, not {url[:40]!r}")
    digest = normalise_sha256(sha256)
    folder = state_dir / ".download"
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"{digest}.part"
    try:
        got = download(url, part, model="knowledge bundle", label="the knowledge bundle",
                       policy=DownloadPolicy(timeout_s=timeout_s, retries=2))
    except ModelError as err:
        raise BundleDownloadError(
            f"the knowledge bundle could not be downloaded from {url}: {err.message}"
        ) from err
    except (ValueError, http.client.HTTPException) as err:  # InvalidURL, a malformed reply
        raise BundleError(f"the bundle could not be fetched from {url[:80]!r} ({err})") from err
    if got != digest:
        part.unlink(missing_ok=True)
        raise BundleChecksumError(
            f"the bundle from {url} has sha256 {got}, not {digest}; nothing was changed. "
            "Check the URL and the hash you sent"
        )
    return part


def unpack_bundle(archive: Path, target: Path, chunk_chars: int) -> int:
    """Unpack and check ``archive`` into ``target`` (made fresh); return the file count."""
    data = archive.read_bytes()
    members = _members(data)
    if not members:
        raise BundleError(
            f"the bundle holds no knowledge files ({', '.join(SUFFIXES)}); nothing was changed"
        )
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    try:
        for name, content in members:
            path = target / name
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError as err:
                raise BundleError(f"bundle file {name} is not UTF-8 text; nothing was changed") from err
            try:
                chunk_file(path, text, chunk_chars)
            except KnowledgeError as err:
                raise BundleError(f"bundle file {name}: {err.message}; nothing was changed") from err
            path.write_bytes(content)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return len(members)


def _safe_name(name: str) -> str | None:
    """The member's relative path when it is a knowledge file we may write, else None."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or name.startswith(("/", "\\")):
        raise BundleError(f"bundle member {name!r} points outside the bundle; nothing was changed")
    if path.suffix.lower() not in SUFFIXES or any(p.startswith(".") for p in path.parts):
        return None
    return str(path)


def _members(data: bytes) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    total = 0

    def add(name: str, size: int, read: Any) -> None:
        nonlocal total
        safe = _safe_name(name)
        if safe is None:
            return
        if size > MAX_FILE_BYTES:
            raise BundleError(f"bundle file {name} is larger than {MAX_FILE_BYTES} bytes")
        total += size
        if total > MAX_BUNDLE_BYTES:
            raise BundleError(f"the bundle unpacks to more than {MAX_BUNDLE_BYTES} bytes")
        out.append((safe, read()))

    if zipfile.is_zipfile(io.BytesIO(data)):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for info in archive.infolist():
                    if not info.is_dir():
                        add(info.filename, info.file_size, lambda i=info: archive.read(i))
        except (zipfile.BadZipFile, OSError) as err:
            raise BundleError(f"the bundle is a damaged zip file ({err}); nothing was changed") from err
        return out
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for member in tar.getmembers():
                if member.isdir():
                    continue
                if not member.isfile():
                    raise BundleError(
                        f"bundle member {member.name!r} is a link or device; bundles hold plain files only"
                    )
                handle = tar.extractfile(member)
                if handle is not None:
                    add(member.name, member.size, handle.read)
    except (tarfile.TarError, EOFError, OSError) as err:
        raise BundleError(
            f"the bundle is not a tar, tar.gz or zip file ({err}); nothing was changed"
        ) from err
    return out


def write_pointer(state_dir: Path, info: BundleInfo) -> None:
    pointer = state_dir / POINTER
    temporary = pointer.with_name(POINTER + ".new")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(info.as_dict(), handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, pointer)


def remove_other_bundles(state_dir: Path, keep: Path) -> None:
    bundles = state_dir / "bundles"
    if not bundles.is_dir():
        return
    for folder in bundles.iterdir():
        if folder.resolve() != keep.resolve():
            shutil.rmtree(folder, ignore_errors=True)


def new_info(digest: str, folder: Path, url: str, files: int) -> BundleInfo:
    return BundleInfo(digest, folder, url, files, round(time.time(), 3))
