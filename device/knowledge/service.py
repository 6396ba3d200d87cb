"""The knowledge service the device runs: its index kept current, looked up per turn.

::

    knowledge = KnowledgeBase(config.knowledge)
    knowledge.open()                       # incremental build (in a worker thread)
    found = knowledge.lookup("when do you open on sundays?")   # a Retrieval
    found.matched, found.context()

``lookup`` runs on the caller's thread (the event loop: a few milliseconds at 5 000
chunks). Rebuilds and bundle syncs build a new index file beside the old one; the
reader is swapped by :meth:`swap_reader` on the thread that looks up.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from edgevoice.device.config.sections.knowledge import KnowledgeConfig
from edgevoice.device.knowledge import bundle as bundles
from edgevoice.device.knowledge.errors import KnowledgeError
from edgevoice.device.knowledge.index import BuildReport, KnowledgeIndex, build_index
from edgevoice.device.knowledge.rerank import CANDIDATES, Reranker, load_reranker
from edgevoice.device.knowledge.retrieval import Passage, Retrieval, retrieve
from edgevoice.models.store import _writable_or_creatable

_LOGGER = logging.getLogger(__name__)

USER_STATE_DIR = Path("~/.local/share/edgevoice")
INDEX_NAME = "index.sqlite3"


def default_index_path(state_dir: Path | None = None) -> Path:
    """``knowledge/index.sqlite3`` under the device's state folder (``[device] state_dir``)
    when this user may write there, else under ``~/.local/share/edgevoice``."""
    base = state_dir if state_dir is not None and _writable_or_creatable(state_dir) else None
    return (base or USER_STATE_DIR.expanduser()) / "knowledge" / INDEX_NAME


def main_titles(titles: list[str]) -> tuple[str, ...]:
    """The titles that are not a longer form of another ("Museum galleries" of "Museum")."""
    ordered = sorted(dict.fromkeys(t.strip() for t in titles if t.strip()), key=len)
    kept: list[str] = []
    for title in ordered:
        if not any(title.lower().startswith(k.lower()) for k in kept):
            kept.append(title)
    return tuple(kept)


class KnowledgeBase:
    """The index of ``config.paths`` (and the synced bundle), and lookups in it."""

    def __init__(self, config: KnowledgeConfig, *, index_path: Path | None = None,
                 state_dir: Path | None = None, reranker: Reranker | None = None) -> None:
        self.config = config
        self.index_path = Path(index_path or (Path(config.index).expanduser() if config.index
                                              else default_index_path(state_dir)))
        self.state_dir = self.index_path.parent
        self._reader: KnowledgeIndex | None = None
        self._topics: tuple[str, ...] = ()
        self.last_build: BuildReport | None = None
        # The second stage ([knowledge] rerank): loaded by build() (in a worker thread at
        # start: the model takes about half a second to load), or passed in.
        self.reranker = reranker
        self._rerank_loaded = reranker is not None

    # --- the index ----------------------------------------------------------------------

    def sources(self) -> list[str]:
        paths = list(self.config.paths)
        current = bundles.current_bundle(self.state_dir)
        if current is not None:
            paths.append(str(current.folder))
        return paths

    def build(self, *, full: bool = False, strict: bool = False,
              extra: tuple[str, ...] = ()) -> tuple[BuildReport, KnowledgeIndex]:
        """Bring the index up to date and open a reader on it (any thread)."""
        report = build_index(self.index_path, [*self.sources(), *extra],
                             chunk_chars=self.config.chunk_chars, full=full, strict=strict)
        for warning in report.warnings:
            _LOGGER.warning("knowledge: %s", warning)
        self.load_reranker()  # here, off the event loop: the daemon builds in a worker thread
        return report, KnowledgeIndex(self.index_path)

    def open(self, *, full: bool = False) -> BuildReport:
        """Build (incrementally) and start answering from the result."""
        report, reader = self.build(full=full)
        self.swap_reader(reader, report)
        return report

    def load_reranker(self) -> Reranker | None:
        """Load the re-ranker ``[knowledge] rerank`` asks for, once (any thread)."""
        if not self._rerank_loaded:
            self._rerank_loaded = True
            self.reranker = load_reranker(self.config.rerank)
        return self.reranker

    def swap_reader(self, reader: KnowledgeIndex, report: BuildReport | None = None) -> None:
        """Answer from ``reader`` from now on (call on the thread that looks up)."""
        old, self._reader = self._reader, reader
        self._topics = main_titles(reader.titles())
        if report is not None:
            self.last_build = report
        if old is not None:
            old.close()

    def reader(self) -> KnowledgeIndex:
        if self._reader is None:
            self._reader = KnowledgeIndex(self.index_path)
            self._topics = main_titles(self._reader.titles())
        return self._reader

    @property
    def topics(self) -> tuple[str, ...]:
        return self._topics

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # --- per turn -------------------------------------------------------------------------

    def lookup(self, text: str) -> Retrieval:
        """The passages for one turn, timed. Never raises: a failing index is logged and
        the turn goes on without knowledge."""
        started = time.perf_counter()
        try:
            found = self._retrieve(text, self.config.top_k)
        except KnowledgeError as err:
            _LOGGER.warning("knowledge lookup failed (%s); the turn goes on without it", err)
            found = Retrieval()
        except Exception:
            _LOGGER.exception("knowledge lookup failed; the turn goes on without it")
            found = Retrieval()
        elapsed = (time.perf_counter() - started) * 1000.0
        return Retrieval(found.passages, self._topics, elapsed, found.best, found.terms,
                         found.answer_p, found.answers)

    def _retrieve(self, text: str, top_k: int, min_score: float | None = None) -> Retrieval:
        floor = self.config.min_score if min_score is None else min_score
        reranker = self.load_reranker()
        if reranker is None:
            return retrieve(self.reader(), text, top_k=top_k, min_score=floor, candidates=max(top_k, 12))
        found = retrieve(self.reader(), text, top_k=max(top_k, CANDIDATES), min_score=0.0,
                         candidates=max(top_k, 12))
        return reranker.rerank(text, found, top_k=top_k, min_score=floor)

    def search(self, text: str, limit: int) -> list[Passage]:
        """The best ``limit`` chunks for ``text`` whatever their confidence (the CLI)."""
        return list(self._retrieve(text, limit, min_score=0.0).passages)

    def stats(self) -> dict[str, Any]:
        data = self.reader().stats()
        current = bundles.current_bundle(self.state_dir)
        data["bundle"] = current.as_dict() if current else None
        data["paths"] = list(self.config.paths)
        return data

    # --- fleets ---------------------------------------------------------------------------

    def sync_bundle(self, url: str, sha256: str) -> tuple[BuildReport, KnowledgeIndex, bundles.BundleInfo]:
        """Fetch, check and index a bundle; swap the index and the bundle pointer (any
        thread). Raises a ``BundleError``/``BundleDownloadError`` and changes nothing
        when the bundle is bad. Then call :meth:`swap_reader` with the reader."""
        digest = bundles.normalise_sha256(sha256)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        current = bundles.current_bundle(self.state_dir)
        archive = bundles.fetch_bundle(url, digest, self.state_dir)
        try:
            if current is not None and current.sha256 == digest:
                report, reader = self.build()
                return report, reader, current
            folder = self.state_dir / "bundles" / digest
            files = bundles.unpack_bundle(archive, folder, self.config.chunk_chars)
            try:
                report = build_index(self.index_path, [*self.config.paths, str(folder)],
                                     chunk_chars=self.config.chunk_chars)
            except BaseException:
                import shutil

                shutil.rmtree(folder, ignore_errors=True)
                raise
            info = bundles.new_info(digest, folder, url, files)
            bundles.write_pointer(self.state_dir, info)
            bundles.remove_other_bundles(self.state_dir, folder)
        finally:
            archive.unlink(missing_ok=True)
        _LOGGER.info("knowledge bundle %s synced: %d files, %d chunks", digest[:12], files, report.chunks)
        return report, KnowledgeIndex(self.index_path), info
