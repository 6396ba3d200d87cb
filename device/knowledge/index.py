"""The knowledge index: one SQLite file with an FTS5 table (porter stemming, BM25).

Building is incremental and atomic. A build copies the current index (when it is
sound and was made the same way) into a new file beside it, re-chunks only the files
whose size, mtime *and* content hash changed, drops the chunks of files that are
gone, fsyncs, and renames the new file over the old one. A power cut at any moment
leaves the old index or the new one, never half of either; a stale ``.building``
file left by a cut is removed by the next build. An index that cannot be read (a
corrupted file, a foreign schema) is rebuilt from the sources, with a warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgevoice.device.knowledge.chunking import SUFFIXES, Candidate, Chunk, ChunkKind, chunk_file
from edgevoice.device.knowledge.errors import (
    KnowledgeError,
    KnowledgeIndexError,
    KnowledgePathError,
    KnowledgeSourceError,
)

_LOGGER = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
TOKENIZER = "porter unicode61 remove_diacritics 2"
# BM25 column weights: heading, question, body, keywords. The question phrasings of a
# Q/A entry and its keywords say what it answers; tuned on bench/knowledge's tuning set.
COLUMN_WEIGHTS = (2.0, 4.0, 1.0, 3.0)

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
                    sha256 TEXT NOT NULL, title TEXT NOT NULL, chunks INTEGER NOT NULL);
CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL, key TEXT NOT NULL,
                     kind TEXT NOT NULL, terms TEXT NOT NULL DEFAULT '',
                     qterms TEXT NOT NULL DEFAULT '');
CREATE INDEX chunks_path ON chunks(path);
CREATE VIRTUAL TABLE fts USING fts5(heading, question, body, keywords, tokenize='{TOKENIZER}');
CREATE VIRTUAL TABLE fts_terms USING fts5vocab(fts, 'instance');
CREATE VIRTUAL TABLE fts_rows USING fts5vocab(fts, 'row');
"""


@dataclass(frozen=True, slots=True)
class BuildReport:
    """What one build did."""

    index: str
    files: int
    chunks: int
    rechunked: tuple[str, ...]  # files read and cut again
    removed: tuple[str, ...]
    from_scratch: bool
    seconds: float
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "files": self.files, "chunks": self.chunks,
                "rechunked": list(self.rechunked), "removed": list(self.removed),
                "from_scratch": self.from_scratch, "seconds": round(self.seconds, 4),
                "warnings": list(self.warnings)}


@dataclass(slots=True)
class _Plan:
    keep: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # unchanged files
    touch: dict[str, tuple[int, int]] = field(default_factory=dict)  # same content, new mtime
    chunk: dict[str, tuple[int, int, str, str, list[Chunk]]] = field(default_factory=dict)


def discover(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """The knowledge files under ``paths`` (files and folders), and a warning per
    path that does not exist."""
    found: dict[str, Path] = {}
    warnings: list[str] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for item in sorted(path.rglob("*")):
                if item.is_file() and item.suffix.lower() in SUFFIXES and not item.name.startswith("."):
                    found[str(item.resolve())] = item.resolve()
        elif path.is_file():
            found[str(path.resolve())] = path.resolve()
        else:
            warnings.append(f"knowledge path {path} does not exist; skipped")
    return [found[key] for key in sorted(found)], warnings


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_index(path: Path) -> str | None:
    """``None`` when ``path`` is a sound index of this schema, else what is wrong."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            result = db.execute("PRAGMA quick_check").fetchone()
            if not result or result[0] != "ok":
                return f"integrity check failed ({result[0] if result else 'no answer'})"
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != SCHEMA_VERSION:
                return "made by another version of edgevoice"
            db.execute("SELECT count(*) FROM fts").fetchone()
    except sqlite3.DatabaseError as err:
        return str(err)
    return None


def build_index(
    index_path: Path,
    paths: Sequence[str | Path],
    *,
    chunk_chars: int,
    full: bool = False,
    strict: bool = False,
) -> BuildReport:
    """Bring the index at ``index_path`` up to date with ``paths`` (see the module doc).

    ``strict``: a missing path or an unreadable file raises instead of being skipped
    with a warning (the CLI's ``add``). Raises ``KnowledgeIndexError`` when the index
    cannot be written.
    """
    started = time.perf_counter()
    files, warnings = discover(paths)
    if strict and warnings:
        raise KnowledgePathError(warnings[0] + "; give an existing file or folder")
    index_path = Path(index_path)
    building = index_path.with_name(index_path.name + ".building")
    try:
        index_path.parent.mkdir(parents=True, exist_ok=True)
        building.unlink(missing_ok=True)
    except OSError as err:
        raise KnowledgeIndexError(f"cannot write the knowledge index in {index_path.parent}: {err}") from err
    from_scratch = full or not index_path.exists()
    if not from_scratch:
        problem = check_index(index_path)
        if problem is None and _meta(index_path, "chunk_chars") != str(chunk_chars):
            problem = "chunk_chars changed"
        if problem is not None:
            if problem != "chunk_chars changed":
                _LOGGER.warning("knowledge index %s cannot be used (%s); rebuilding it from the sources",
                                index_path, problem)
                warnings.append(f"the index could not be used ({problem}) and was rebuilt")
            from_scratch = True
    try:
        db = sqlite3.connect(building, isolation_level=None)
    except sqlite3.Error as err:
        raise KnowledgeIndexError(f"cannot create {building}: {err}") from err
    try:
        if from_scratch:
            db.executescript(_SCHEMA)
            known: dict[str, tuple[int, int, str]] = {}
        else:
            with contextlib.closing(sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)) as old:
                old.backup(db)
            known = {row[0]: (row[1], row[2], row[3])
                     for row in db.execute("SELECT path, mtime_ns, size, sha256 FROM files")}
        plan = _plan(files, known, chunk_chars, warnings, strict)
        removed = sorted(set(known) - set(plan.keep) - set(plan.touch) - set(plan.chunk))
        db.execute("BEGIN")
        for gone in [*removed, *plan.chunk]:
            _drop_file(db, gone)
        for path, (mtime_ns, size) in plan.touch.items():
            db.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (mtime_ns, size, path))
        new_ids: list[int] = []
        for path, (mtime_ns, size, digest, title, chunks) in plan.chunk.items():
            db.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)",
                       (path, mtime_ns, size, digest, title, len(chunks)))
            for chunk in chunks:
                cursor = db.execute("INSERT INTO chunks (path, key, kind) VALUES (?, ?, ?)",
                                    (path, chunk.key, str(chunk.kind)))
                rowid = int(cursor.lastrowid or 0)
                db.execute("INSERT INTO fts (rowid, heading, question, body, keywords) "
                           "VALUES (?, ?, ?, ?, ?)",
                           (rowid, chunk.heading, chunk.question, chunk.body, chunk.keywords))
                new_ids.append(rowid)
        _store_terms(db, new_ids)
        for key, value in (("schema", SCHEMA_VERSION), ("chunk_chars", str(chunk_chars)),
                           ("built_at", f"{time.time():.3f}")):
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
        db.execute("COMMIT")
        if plan.chunk or removed or from_scratch:
            db.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        total = int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        nfiles = int(db.execute("SELECT count(*) FROM files").fetchone()[0])
    except sqlite3.Error as err:
        db.close()
        building.unlink(missing_ok=True)
        raise KnowledgeIndexError(f"cannot write the knowledge index {building}: {err}") from err
    except BaseException:
        db.close()
        building.unlink(missing_ok=True)
        raise
    db.close()
    replace_atomically(building, index_path)
    report = BuildReport(str(index_path), nfiles, total, tuple(plan.chunk), tuple(removed), from_scratch,
                         time.perf_counter() - started, tuple(warnings))
    _LOGGER.info("knowledge index %s: %d files, %d chunks (%d re-chunked, %d removed) in %.3f s",
                 index_path, nfiles, total, len(plan.chunk), len(removed), report.seconds)
    return report


def replace_atomically(new: Path, target: Path) -> None:
    """fsync ``new``, rename it over ``target``, fsync the folder."""
    try:
        with open(new, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(new, target)
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        raise KnowledgeIndexError(f"cannot put the new knowledge index in place at {target}: {err}") from err


def _meta(index_path: Path, key: str) -> str | None:
    with contextlib.closing(sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _plan(files: list[Path], known: dict[str, tuple[int, int, str]], chunk_chars: int,
          warnings: list[str], strict: bool) -> _Plan:
    plan = _Plan()
    for file in files:
        key = str(file)
        try:
            info = file.stat()
        except OSError as err:
            warnings.append(f"{file}: {err}; skipped")
            continue
        old = known.get(key)
        if old is not None and old[0] == info.st_mtime_ns and old[1] == info.st_size:
            plan.keep[key] = old
            continue
        try:
            data = file.read_bytes()
        except OSError as err:
            if strict:
                raise KnowledgeSourceError(f"{file}: {err}") from err
            warnings.append(f"{file}: {err}; skipped")
            if old is not None:
                plan.keep[key] = old
            continue
        digest = file_sha256(data)
        if old is not None and old[2] == digest:
            plan.touch[key] = (info.st_mtime_ns, info.st_size)
            continue
        try:
            text = data.decode("utf-8")
            title, chunks = chunk_file(file, text, chunk_chars)
        except (UnicodeDecodeError, KnowledgeError) as err:
            message = str(err) if isinstance(err, KnowledgeError) else f"{file}: not UTF-8 text"
            if strict:
                raise KnowledgeSourceError(message) from err
            # Keep what the file said before it broke: losing nothing beats being current.
            warnings.append(message + ("; its previous version stays indexed" if old else "; skipped"))
            _LOGGER.warning("%s", warnings[-1])
            if old is not None:
                plan.keep[key] = old
            continue
        plan.chunk[key] = (info.st_mtime_ns, info.st_size, digest, title, chunks)
    return plan


def _drop_file(db: sqlite3.Connection, path: str) -> None:
    ids = [row[0] for row in db.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
    db.executemany("DELETE FROM fts WHERE rowid = ?", [(i,) for i in ids])
    db.execute("DELETE FROM chunks WHERE path = ?", (path,))
    db.execute("DELETE FROM files WHERE path = ?", (path,))


def _store_terms(db: sqlite3.Connection, ids: list[int]) -> None:
    """Each new chunk's stemmed terms (all columns), and the content terms of each of its
    question phrasings ("a b|c d"), for the confidence (see retrieval)."""
    if not ids:
        return
    from edgevoice.device.knowledge.retrieval import content_words

    wanted = set(ids)
    terms: dict[int, set[str]] = {i: set() for i in ids}
    low, high = min(ids), max(ids)
    for term, doc in db.execute("SELECT term, doc FROM fts_terms WHERE doc BETWEEN ? AND ?", (low, high)):
        if doc in wanted:
            terms[doc].add(term)
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.tok USING fts5(text, tokenize='{TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.tok_terms USING fts5vocab(temp, tok, 'instance')")
    phrasings: dict[int, list[str]] = {}
    marks = ",".join("?" * len(ids)) if len(ids) < 900 else None
    rows = (db.execute(f"SELECT rowid, question FROM fts WHERE rowid IN ({marks})", ids) if marks
            else db.execute("SELECT rowid, question FROM fts"))
    pending: list[tuple[int, int, str]] = []
    for rowid, question in rows:
        if rowid in wanted and question:
            for number, line in enumerate(question.split("\n")):
                pending.append((rowid, number, " ".join(content_words(line))))
    db.execute("DELETE FROM temp.tok")
    db.executemany("INSERT INTO temp.tok (rowid, text) VALUES (?, ?)",
                   [(n, text) for n, (_, _, text) in enumerate(pending, 1)])
    stems: dict[int, list[str]] = {}
    for term, doc in db.execute("SELECT term, doc FROM temp.tok_terms ORDER BY doc, offset"):
        stems.setdefault(doc, []).append(term)
    for n, (rowid, _, _) in enumerate(pending, 1):
        if n in stems:
            phrasings.setdefault(rowid, []).append(" ".join(dict.fromkeys(stems[n])))
    db.execute("DELETE FROM temp.tok")
    db.executemany("UPDATE chunks SET terms = ?, qterms = ? WHERE id = ?",
                   [(" ".join(sorted(terms[i])), "|".join(phrasings.get(i, [])), i) for i in ids])


class KnowledgeIndex:
    """A read-only view of a built index (one connection; use it from one thread)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            self._db.execute(f"CREATE VIRTUAL TABLE temp.query USING fts5(text, tokenize='{TOKENIZER}')")
            self._db.execute("CREATE VIRTUAL TABLE temp.query_terms USING fts5vocab(temp, query, 'row')")
            self.total = int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])
            # Every term's document frequency, read once: a lookup in fts5vocab scans it.
            self._df: dict[str, int] = dict(self._db.execute("SELECT term, doc FROM fts_rows").fetchall())
        except sqlite3.Error as err:
            raise KnowledgeIndexError(f"cannot open the knowledge index {self.path}: {err}") from err

    def close(self) -> None:
        self._db.close()

    def stems(self, text: str) -> list[str]:
        """``text``'s terms as the index's tokenizer makes them (lower case, stemmed)."""
        self._db.execute("DELETE FROM temp.query")
        self._db.execute("INSERT INTO temp.query (rowid, text) VALUES (1, ?)", (text,))
        return [row[0] for row in self._db.execute("SELECT term FROM temp.query_terms")]

    def document_frequency(self, term: str) -> int:
        return self._df.get(term, 0)

    def candidates(self, match: str, limit: int) -> list[Candidate]:
        weights = ", ".join(f"{w:g}" for w in COLUMN_WEIGHTS)
        rows = self._db.execute(
            f"SELECT fts.rowid, -bm25(fts, {weights}), c.key, c.kind, c.path, fts.heading, "
            "fts.question, fts.body, c.terms, c.qterms "
            "FROM fts JOIN chunks c ON c.id = fts.rowid WHERE fts MATCH ? "
            f"ORDER BY bm25(fts, {weights}) LIMIT ?",
            (match, limit),
        ).fetchall()
        return [Candidate(r[0], float(r[1]), r[2], ChunkKind(r[3]), r[4], r[5], r[6], r[7],
                          frozenset(r[8].split()),
                          tuple(frozenset(p.split()) for p in r[9].split("|") if p)) for r in rows]

    def files(self) -> list[dict[str, Any]]:
        return [{"path": r[0], "title": r[1], "chunks": r[2], "sha256": r[3]}
                for r in self._db.execute("SELECT path, title, chunks, sha256 FROM files ORDER BY path")]

    def titles(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT DISTINCT title FROM files ORDER BY path")]

    def meta(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self._db.execute("SELECT key, value FROM meta")}

    def stats(self) -> dict[str, Any]:
        meta = self.meta()
        kinds = dict(self._db.execute("SELECT kind, count(*) FROM chunks GROUP BY kind").fetchall())
        return {
            "index": str(self.path),
            "files": int(self._db.execute("SELECT count(*) FROM files").fetchone()[0]),
            "chunks": self.total,
            "qa_entries": int(kinds.get("qa", 0)),
            "prose_chunks": int(kinds.get("prose", 0)),
            "bytes": self.path.stat().st_size,
            "built_at": float(meta.get("built_at", "0")),
            "chunk_chars": int(meta.get("chunk_chars", "0")),
            "titles": json.loads(json.dumps(self.titles())),
        }
