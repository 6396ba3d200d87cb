"""Reading a pause's words off the audio thread, for the endpointer's text hold.

The recognizer's early final (see :mod:`.listener`) hands back a callable that may wait for
the engine's own thread (Moonshine decodes on one). The front end must never wait, so a
:class:`TextWorker` calls it on a thread of its own, reads the words with the pure rule of
:mod:`.turn_text`, and keeps the answer until the listener takes it at its next frame
(:meth:`TextReader.verdicts` never blocks), as :class:`~.turn_model.TurnWorker` does for the
turn model.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from edgevoice.audio.hearing.asr import AsrResult
from edgevoice.audio.hearing.turn_text import TextReading, Unfinished, read_text

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TextVerdict:
    """What the words of pause ``pause`` say: ``unfinished`` is why they are mid-thought,
    ``None`` when they could end the turn."""

    pause: int
    unfinished: Unfinished | None
    text: str
    left_out: str = ""  # a word the recognizer weighed and left out, which made it mid-thought

    @property
    def mid_thought(self) -> bool:
        return self.unfinished is not None


def reading_of(result: AsrResult) -> TextReading:
    """The pure reading of one transcript: its words, the engine's end mark, and the words
    it weighed writing next (every reader of an early final reads all three, here)."""
    return read_text(result.text, result.end_mark, result.next_words)


def verdict_of(pause: int, result: AsrResult) -> TextVerdict:
    """:func:`reading_of` for pause ``pause``."""
    reading = reading_of(result)
    return TextVerdict(pause, reading.unfinished, result.text, reading.left_out)


class TextReader(Protocol):
    """What the listener asks about a pause's words: :meth:`ask` must not block the audio
    thread; :meth:`verdicts` returns the answers ready so far (never waits)."""

    def ask(self, pause: int, transcript: Callable[[], AsrResult]) -> None: ...

    def verdicts(self) -> list[TextVerdict]: ...

    def close(self) -> None: ...


class TextWorker(TextReader):
    """Waits for each transcript on one thread of its own (started on the first question).
    A transcript that fails is answered "could end the turn": the pause is then judged as
    without a text hold."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edgevoice-text")
        self._lock = threading.Lock()
        self._pending: list[Future[TextVerdict]] = []

    def ask(self, pause: int, transcript: Callable[[], AsrResult]) -> None:
        future = self._pool.submit(_read, pause, transcript)
        with self._lock:
            self._pending.append(future)

    def verdicts(self) -> list[TextVerdict]:
        done: list[Future[TextVerdict]] = []
        waiting: list[Future[TextVerdict]] = []
        with self._lock:
            # one look per future: one that finished between two looks would be in neither
            # list, and its pause would wait the whole hold for an answer already given
            for future in self._pending:
                (done if future.done() else waiting).append(future)
            self._pending = waiting
        return [f.result() for f in done]

    def wait_idle(self, timeout_s: float = 5.0) -> bool:
        """Tests: wait until every question asked so far is answered."""
        with self._lock:
            pending = list(self._pending)
        for future in pending:
            try:
                future.result(timeout_s)
            except TimeoutError:
                return False
        return True

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _read(pause: int, transcript: Callable[[], AsrResult]) -> TextVerdict:
    try:
        result = transcript()
    except Exception:  # the recognizer failed: the turn's end says so; no hold on no words
        _LOGGER.warning("the early final failed; pause %d ends as without a text hold", pause,
                        exc_info=True)
        return TextVerdict(pause, None, "")
    verdict = verdict_of(pause, result)
    if verdict.left_out:  # the words on record read finished: say why the pause was held
        _LOGGER.debug("pause %d held: %r, and the recognizer weighed %r after it",
                      pause, verdict.text, verdict.left_out)
    return verdict
