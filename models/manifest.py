"""The manifest of models edgevoice knows how to fetch.

The shipped list is ``manifest.json`` beside this module. A device may add its
own entries in ``<models dir>/manifest.json`` (same format); a local entry with
the name of a shipped one replaces it.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from edgevoice.models.errors import ManifestError
from edgevoice.models.location import DEFAULT_ENGINE, ModelKind

_LOGGER = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ArchiveType(StrEnum):
    """How a downloaded file becomes model files."""

    ZIP = "zip"
    TAR_GZ = "tar.gz"
    FILE = "file"  # a single file, installed as is


@dataclass(frozen=True, slots=True)
class ModelSourceFile:
    """One download of a model: a URL, what it is, and what it should hash to."""

    url: str
    archive: ArchiveType
    size: int | None = None
    approximate_size: bool = False
    sha256: str = ""  # empty: not pinned yet (trust on first use)
    filename: str = ""  # the name it is saved under; default: the URL's last segment
    root: str = ""  # the folder inside the archive that becomes the model folder

    @property
    def saved_name(self) -> str:
        return self.filename or _url_basename(self.url)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """A model the registry can fetch."""

    name: str
    kind: ModelKind
    engine: str
    language: str | None
    licence: str
    description: str
    entry: str  # relative path, inside the installed folder, of what the engine loads
    sources: tuple[ModelSourceFile, ...]
    files: tuple[str, ...]  # files that must be present once installed
    aliases: tuple[str, ...] = ()

    @property
    def download_size(self) -> int | None:
        sizes = [s.size for s in self.sources]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": str(self.kind),
            "engine": self.engine,
            "language": self.language,
            "licence": self.licence,
            "description": self.description,
            "size": self.download_size,
            "sources": [
                {"url": s.url, "archive": str(s.archive), "size": s.size,
                 "approximate_size": s.approximate_size, "sha256": s.sha256}
                for s in self.sources
            ],
            "files": list(self.files),
        }


@dataclass(frozen=True, slots=True)
class Manifest:
    """Known models by name (aliases included)."""

    entries: tuple[ManifestEntry, ...]

    def __iter__(self) -> Iterator[ManifestEntry]:
        return iter(self.entries)

    def get(self, name: str) -> ManifestEntry | None:
        for entry in self.entries:
            if name in entry.names():
                return entry
        return None

    def merged(self, other: Manifest) -> Manifest:
        """This manifest with ``other``'s entries added, replacing same-named ones."""
        replaced = {e.name for e in other.entries}
        kept = tuple(e for e in self.entries if e.name not in replaced)
        return Manifest(kept + other.entries)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], origin: str) -> Manifest:
        models = data.get("models")
        if not isinstance(models, list):
            raise ManifestError(f"{origin}: expected a top-level \"models\" list")
        entries = tuple(_parse_entry(m, f"{origin}: models[{i}]") for i, m in enumerate(models))
        seen: set[str] = set()
        for entry in entries:
            for name in entry.names():
                if name in seen:
                    raise ManifestError(f"{origin}: model name {name!r} appears twice")
                seen.add(name)
        return cls(entries)

    @classmethod
    def from_file(cls, path: Path) -> Manifest:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise ManifestError(f"cannot read the model manifest {path}: {err}") from err
        except ValueError as err:
            raise ManifestError(f"{path} is not valid JSON: {err}. Fix or remove it.") from err
        if not isinstance(data, dict):
            raise ManifestError(f"{path}: expected a JSON object")
        return cls.from_dict(data, str(path))


def shipped_manifest() -> Manifest:
    """The manifest that ships with edgevoice."""
    text = resources.files("edgevoice.models").joinpath(MANIFEST_FILE).read_text(encoding="utf-8")
    return Manifest.from_dict(json.loads(text), "edgevoice/models/manifest.json")


def load_manifest(models_dir: Path | None = None) -> Manifest:
    """The shipped manifest, extended by ``<models_dir>/manifest.json`` when there is one."""
    manifest = shipped_manifest()
    if models_dir is not None:
        local = models_dir / MANIFEST_FILE
        if local.is_file():
            _LOGGER.debug("adding local model manifest %s", local)
            manifest = manifest.merged(Manifest.from_file(local))
    return manifest


def _url_basename(url: str) -> str:
    return unquote(posixpath.basename(urlsplit(url).path))


def _safe_relative(path: str, where: str) -> str:
    norm = posixpath.normpath(path)
    if path == "." or norm == ".":
        return "."
    if posixpath.isabs(norm) or norm.startswith("../") or norm == "..":
        raise ManifestError(f"{where}: {path!r} must be a relative path inside the model folder")
    return norm


def _parse_source(raw: Any, where: str) -> ModelSourceFile:
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: expected an object")
    url = raw.get("url")
    if not isinstance(url, str) or urlsplit(url).scheme not in {"http", "https"}:
        raise ManifestError(f"{where}: \"url\" must be an http(s) URL")
    try:
        archive = ArchiveType(raw.get("archive", "file"))
    except ValueError as err:
        raise ManifestError(
            f"{where}: \"archive\" must be one of {', '.join(a.value for a in ArchiveType)}"
        ) from err
    sha = str(raw.get("sha256") or "").lower()
    if sha and not _SHA256.match(sha):
        raise ManifestError(f"{where}: \"sha256\" must be 64 hex digits or empty")
    size = raw.get("size")
    if size is not None and (not isinstance(size, int) or size < 0):
        raise ManifestError(f"{where}: \"size\" must be a byte count")
    source = ModelSourceFile(
        url=url,
        archive=archive,
        size=size,
        approximate_size=bool(raw.get("approximate_size", False)),
        sha256=sha,
        filename=str(raw.get("filename", "")),
        root=_safe_relative(str(raw["root"]), where) if raw.get("root") else "",
    )
    if not source.saved_name or "/" in source.saved_name:
        raise ManifestError(f"{where}: cannot tell the file name from the URL; give \"filename\"")
    return source


def _parse_entry(raw: Any, where: str) -> ManifestEntry:
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: expected an object")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ManifestError(f"{where}: \"name\" must be letters, digits, '.', '_' or '-'")
    where = f"{where} ({name})"
    try:
        kind = ModelKind(str(raw.get("kind")))
    except ValueError as err:
        raise ManifestError(
            f"{where}: \"kind\" must be one of {', '.join(k.value for k in ModelKind)}"
        ) from err
    sources_raw = raw.get("sources")
    if not isinstance(sources_raw, list) or not sources_raw:
        raise ManifestError(f"{where}: \"sources\" must be a non-empty list")
    sources = tuple(_parse_source(s, f"{where} sources[{i}]") for i, s in enumerate(sources_raw))
    if len({s.saved_name for s in sources}) != len(sources):
        raise ManifestError(f"{where}: two sources are saved under the same file name")
    files_raw = raw.get("files", [])
    if not isinstance(files_raw, list) or not all(isinstance(f, str) for f in files_raw):
        raise ManifestError(f"{where}: \"files\" must be a list of relative paths")
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and _NAME.match(a) for a in aliases):
        raise ManifestError(f"{where}: \"aliases\" must be a list of names")
    language = raw.get("language")
    return ManifestEntry(
        name=name,
        kind=kind,
        engine=str(raw.get("engine") or DEFAULT_ENGINE[kind]),
        language=str(language) if language else None,
        licence=str(raw.get("licence", "")),
        description=str(raw.get("description", "")),
        entry=_safe_relative(str(raw.get("entry", ".")), where),
        sources=sources,
        files=tuple(_safe_relative(f, where) for f in files_raw),
        aliases=tuple(aliases),
    )
