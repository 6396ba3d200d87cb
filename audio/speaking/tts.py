"""Text to speech: the engine interface and a cancellable, threaded synthesizer.

An engine turns one piece of text into 16 kHz PCM (:class:`TtsAudio`) with the
word timing the play cursor needs (``word_ends``: end character offset in the
text, end sample in the PCM, per word). Engines are blocking and heavy; the
:class:`Synthesizer` runs them on one worker thread, one chunk at a time, so a
reply can be cancelled between sentences and between the chunks of a long one
(the chunk being computed finishes on the worker; its audio is thrown away).

Implementations: piper (:mod:`edgevoice.audio.speaking.tts_piper`). Test fakes subclass
:class:`TtsEngine`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from edgevoice.audio.errors import AudioError
from edgevoice.audio.frames import SAMPLE_RATE, Pcm

_LOGGER = logging.getLogger(__name__)

WordEnds = tuple[tuple[int, int], ...]


class TtsError(AudioError):
    """The TTS engine failed to load or to synthesize."""

    code = "tts_error"


@dataclass(frozen=True, slots=True)
class TtsAudio:
    """One synthesized chunk: 16 kHz mono int16 with per-word end positions."""

    text: str
    pcm: Pcm
    word_ends: WordEnds
    started: float  # time.monotonic() when synthesis of this chunk began
    finished: float  # ... and when its 16 kHz audio was ready

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / SAMPLE_RATE


class TtsEngine(ABC):
    """A blocking text-to-speech engine producing 16 kHz PCM."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The voice, for logs and ``--json`` output."""

    @abstractmethod
    def synthesize(self, text: str) -> TtsAudio:
        """Speak one chunk of text (a sentence or part of one). Blocking. Raises TtsError."""

    def warm_up(self) -> None:
        """Run once so the first real sentence does not pay for lazy initialisation."""
        self.synthesize("Hi.")

    def release_memory(self) -> bool:
        """Give back memory that long chunks made the engine keep (piper: onnxruntime's
        arena), between replies. Blocking. True when something was released."""
        return False

    def close(self) -> None:  # noqa: B027 - most engines hold nothing to release
        """Release the engine."""


# --- chunking a long sentence ------------------------------------------------------------

_CLAUSE_BREAK = re.compile(r"(?<=[,;:—–])\s+|\s+(?=[—–-]\s)|(?<=[，、；：])")


def chunk_text(text: str, max_chars: int) -> list[str]:
    """Cut a sentence longer than ``max_chars`` into pieces at clause boundaries
    (else at spaces) so synthesis can be cancelled between pieces and the first
    piece plays sooner. Short text comes back whole."""
    text = text.strip()
    if len(text) <= max_chars:
        return [text] if text else []
    pieces: list[str] = []
    rest = text
    while len(rest) > max_chars:
        window = rest[: max_chars + 1]
        cut = -1
        for match in _CLAUSE_BREAK.finditer(window):
            if match.start() >= max_chars // 3:
                cut = match.start()
        if cut <= 0:
            cut = window.rfind(" ")
        if cut <= 0:
            cut = max_chars
        head, rest = rest[:cut].strip(), rest[cut:].strip()
        if head:
            pieces.append(head)
    if rest:
        pieces.append(rest)
    return pieces


# --- word timing --------------------------------------------------------------------------

_WORD = re.compile(r"\S+")


def proportional_word_ends(
    text: str, speech_samples: int, weights: list[int] | None = None, offset: int = 0
) -> WordEnds:
    """Word end positions spread over ``speech_samples`` in proportion to ``weights``
    (one per whitespace-separated word, e.g. phoneme counts) or to word lengths.
    Text without spaces (CJK) is timed per character."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if len(words) == 1 and len(text) > 1 and not weights:
        words = [(i, i + 1) for i in range(len(text)) if not text[i].isspace()]
    if not words or speech_samples <= 0:
        return ()
    if weights is None or len(weights) != len(words):
        weights = [end - start + 1 for start, end in words]  # +1: the gap after it
    total = float(sum(weights)) or 1.0
    ends: list[tuple[int, int]] = []
    acc = 0
    for (_, end), weight in zip(words, weights, strict=True):
        acc += weight
        ends.append((end, offset + round(speech_samples * acc / total)))
    return tuple(ends)


def shift_word_ends(word_ends: WordEnds, samples: int) -> WordEnds:
    return tuple((char, sample + samples) for char, sample in word_ends)


# --- the worker thread --------------------------------------------------------------------


class Synthesizer:
    """Runs a :class:`TtsEngine` on one worker thread, chunk by chunk.

    ``await`` :meth:`stream` from the event loop; cancelling the awaiting task stops
    at the next chunk boundary (the chunk in progress finishes on the worker and is
    discarded). ``on_chunk_start`` (worker thread) records when synthesis began.
    """

    def __init__(self, engine: TtsEngine, *, max_chunk_chars: int = 150) -> None:
        self.engine = engine
        self.max_chunk_chars = max_chunk_chars
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tts")
        self.busy_s = 0.0  # total time spent synthesizing (for the real-time factor)
        self.audio_s = 0.0  # total audio produced

    async def stream(
        self, text: str, on_chunk_start: Callable[[float], None] | None = None
    ) -> AsyncIterator[TtsAudio]:
        """Synthesize ``text`` (one sentence) chunk by chunk."""
        loop = asyncio.get_running_loop()
        for piece in chunk_text(text, self.max_chunk_chars):
            audio = await loop.run_in_executor(self._executor, self._run, piece, on_chunk_start)
            yield audio

    async def synthesize(self, text: str) -> TtsAudio:
        """The whole text as one :class:`TtsAudio` (chunks joined)."""
        parts = [audio async for audio in self.stream(text)]
        if not parts:
            now = time.monotonic()
            return TtsAudio(text, np.zeros(0, np.int16), (), now, now)
        return join_audio(text, parts)

    def _run(self, piece: str, on_chunk_start: Callable[[float], None] | None) -> TtsAudio:
        if on_chunk_start is not None:
            on_chunk_start(time.monotonic())
        audio = self.engine.synthesize(piece)
        self.busy_s += audio.finished - audio.started
        self.audio_s += audio.duration_s
        return audio

    def release_memory(self, then: Callable[[], object] | None = None) -> None:
        """Run the engine's :meth:`TtsEngine.release_memory` on the worker, after what is
        queued there (call it once a reply is over), then ``then`` if it released
        something (e.g. ``malloc_trim``). Returns at once."""

        def release() -> None:
            try:
                if self.engine.release_memory() and then is not None:
                    then()
            except Exception as err:  # worker thread: log, never kill the executor's thread
                _LOGGER.warning("TTS memory release failed: %s", err)

        try:
            self._executor.submit(release)
        except RuntimeError:  # closed
            pass

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        self.engine.close()


def join_audio(text: str, parts: list[TtsAudio]) -> TtsAudio:
    """Join consecutive chunks of ``text`` into one (word ends re-based on both axes)."""
    pcm_parts: list[Pcm] = []
    ends: list[tuple[int, int]] = []
    samples = 0
    search = 0
    for part in parts:
        base = text.find(part.text, search)
        base = search if base < 0 else base
        ends.extend((base + char, samples + sample) for char, sample in part.word_ends)
        search = base + len(part.text)
        samples += len(part.pcm)
        pcm_parts.append(part.pcm)
    pcm = np.concatenate(pcm_parts) if pcm_parts else np.zeros(0, np.int16)
    return TtsAudio(text, pcm, tuple(ends), parts[0].started, parts[-1].finished)
