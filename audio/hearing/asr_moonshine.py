"""Moonshine: accurate English whose weights a registry package bundles.

``moonshine-voice`` 0.1.0 ships Moonshine tiny-en (``assets/tiny-en/``: encoder and
decoder ``.ort`` files and a tokenizer, MIT) with its own onnxruntime build inside
``libmoonshine.so``; later versions download their models instead, so the extra pins
0.1.0. ``moonshine-cpp`` 0.1.4 (x86-64 only) ships base-en in the same three files. It
is not a streaming recognizer: it decodes a whole window of audio at a time.

Backends. ``onnxruntime`` (the default) runs the files on the Python onnxruntime that the
Silero VAD and the piper voice already load (:mod:`.asr_moonshine_ort`): on tiny-en it
decodes ~4x cheaper than ``libmoonshine`` and keeps ~60 MB less resident (one onnxruntime
in the process instead of two; docs/hearing.md). ``libmoonshine`` (moonshine-voice's own
library, with its word-timing support) stays as an option.

Threads. Decoding runs on one worker thread the engine owns, never on the caller's
(the front end's) thread: onnxruntime's ``run`` and ``libmoonshine`` (called through
ctypes) both release the GIL for the native call, so the front end and the audio thread
go on while it decodes. :meth:`_MoonshineSession.accept` only appends audio and, when the worker is
idle and at least ``partial_interval_s`` of new audio came in, hands the worker the
turn so far to re-decode for a partial (``transcript.user.delta``); it returns the
newest partial the worker has finished, never waiting for one. The cost is bounded:
one decode in flight at most, each of at most ``partial_window_s`` of audio (the last
seconds; longer turns get partials of their tail joined to what was said before it),
and none while the listener holds recognition (the device speaks and a barge-in is
being decided: ``accept`` is not called then). :meth:`_MoonshineSession.finish_soon`
queues the final decode and returns at once, which the listener's early final uses:
the final pass runs inside the turn's closing silence off the front end's thread.

Grammar mode: Moonshine has no grammar. The free-form text is matched to the closest
phrase by word edit distance; within ``GRAMMAR_MAX_DISTANCE`` of the phrase's length it
becomes that phrase, otherwise the text stays as heard and is flagged low-confidence
(``make_result`` flags any text that is not one of the phrases).
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from queue import SimpleQueue
from typing import Any

import numpy as np
import numpy.typing as npt

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.asr import (
    DEFAULT_LOW_CONFIDENCE,
    AsrEngine,
    AsrError,
    AsrModelError,
    AsrResult,
    AsrSession,
    Word,
    make_result,
)
from edgevoice.audio.hearing.asr_moonshine_ort import OrtDecoder
from edgevoice.audio.hearing.moonshine_audio import (
    MIN_DECODE_SAMPLES,
    NOTHING,
    Decoded,
    end_mark,
    normalise,
    speech_span,
    spread_words,
)
from edgevoice.errors import require

_LOGGER = logging.getLogger(__name__)

MODEL_FILES = ("encoder_model.ort", "decoder_model_merged.ort", "tokenizer.bin")
PARTIAL_INTERVAL_S = 0.5  # re-decode for a partial at most every 0.5 s of new audio
PARTIAL_WINDOW_S = 8.0  # and at most the last 8 s of the turn
# base-en, tuned on the tuning set (all conditions): 30 ms before, 0.7 s after, and when
# that says nothing at all, 0.3 s before (32.2 %; 30/200 ms as tiny-en: 38.5 %, 5 turns
# with no words; 0.3 s/0.7 s alone: 34.4 %, and clear piper "turn" heard as "purn")
BASE_SPAN_S = (0.03, 0.7)
BASE_RETRY_SPAN_S = (0.3, 0.7)
GRAMMAR_MAX_DISTANCE = 0.34  # word edits per phrase word still taken as that phrase
# The two English models' quantized encoders: tiny-en 13.3 MB, base-en 20.7 MB.
_BASE_ENCODER_BYTES = 16_000_000
BACKENDS = ("auto", "libmoonshine", "onnxruntime")


def _moonshine() -> Any:
    return require("moonshine_voice", "moonshine", "The Moonshine speech recognizer")


def _has_onnxruntime() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


def model_folder(path: Path) -> Path:
    """The folder holding Moonshine's three files: ``path`` or the folder of a file in it."""
    folder = path if path.is_dir() else path.parent
    missing = [name for name in MODEL_FILES if not (folder / name).exists()]
    if missing:
        raise AsrModelError(
            f"{folder} is not a Moonshine model: {', '.join(missing)} missing. Install the "
            "bundled one with pip install 'edgevoice[moonshine]', or give the folder that holds "
            f"{', '.join(MODEL_FILES)}"
        )
    return folder


def model_arch(folder: Path) -> str:
    """``"base"`` or ``"tiny"``, from the encoder's size (the files carry no name)."""
    return "base" if (folder / "encoder_model.ort").stat().st_size > _BASE_ENCODER_BYTES else "tiny"


def word_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance over words."""
    row = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, wb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (wa != wb))
    return row[len(b)]


def closest_phrase(words: Sequence[str], phrases: Sequence[str]) -> str | None:
    """The phrase ``words`` most likely meant, or None when none is close enough."""
    best: tuple[float, str] | None = None
    for phrase in phrases:
        target = phrase.split()
        score = word_distance(words, target) / max(1, len(target))
        if best is None or score < best[0]:
            best = (score, phrase)
    return best[1] if best is not None and best[0] <= GRAMMAR_MAX_DISTANCE else None


class _Decoder:
    """libmoonshine's transcriber, called only from the engine's worker thread."""

    def __init__(self, folder: Path, word_timestamps: bool, arch: str = "tiny") -> None:
        moonshine = _moonshine()
        options = {"identify_speakers": "false", "word_timestamps": "true" if word_timestamps else "false"}
        model_arch = moonshine.ModelArch.BASE if arch == "base" else moonshine.ModelArch.TINY
        try:
            self._transcriber = moonshine.Transcriber(str(folder), model_arch, options=options)
        except Exception as err:  # MoonshineError, or OSError from the shared library
            raise AsrModelError(f"cannot load Moonshine model {folder}: {err}") from err
        self._lib = self._transcriber._lib
        self._handle = self._transcriber._handle

    def decode(self, pcm: Pcm) -> Decoded:
        """Text, words and end mark of 16 kHz int16 audio; word times from its first sample."""
        begin, end = speech_span(pcm)
        if end - begin < MIN_DECODE_SAMPLES:
            return NOTHING
        audio: npt.NDArray[np.float32] = np.ascontiguousarray(pcm[begin:end], dtype=np.float32)
        audio /= np.float32(32768.0)
        offset = begin / SAMPLE_RATE
        buffer = audio.ctypes.data_as(ctypes.POINTER(ctypes.c_float))  # audio outlives the call
        # The bindings' own transcribe_without_streaming builds the ctypes array from a
        # Python list, one float at a time with the GIL held (~10 ms per second of audio):
        # hand the library the numpy buffer instead, through the same C entry point.
        out = ctypes.POINTER(_transcript_type())()
        error = self._lib.moonshine_transcribe_without_streaming(
            self._handle, buffer, len(audio), SAMPLE_RATE, 0, ctypes.byref(out))
        if error != 0:
            message = self._lib.moonshine_error_to_string(error)
            raise AsrError(f"Moonshine failed to transcribe: {message.decode() if message else error}")
        transcript = self._transcriber._parse_transcript(out)
        texts: list[str] = []
        words: list[Word] = []
        mark = ""
        for line in transcript.lines:
            heard = normalise(line.text)
            texts.extend(heard)
            if heard:
                mark = end_mark(line.text)
            for timing in line.words or ():
                for token in normalise(timing.word):
                    words.append(Word(token, min(1.0, max(0.0, float(timing.confidence))),
                                      round(offset + float(timing.start), 3),
                                      round(offset + float(timing.end), 3)))
        if [w.word for w in words] != texts:
            # No word times (tiny-en comes without its word-timing model, so always here):
            # the words spread evenly over the audio decoded, confidence 1.
            words = spread_words(texts, offset, offset + len(audio) / SAMPLE_RATE)
        return Decoded(" ".join(texts), words, mark)

    def close(self) -> None:
        self._transcriber.close()


def _transcript_type() -> Any:
    from moonshine_voice.moonshine_api import TranscriptC

    return TranscriptC


_Job = tuple[Pcm, "Future[Decoded]"]


class MoonshineEngine(AsrEngine):
    name = "moonshine"
    # a sentence's halves decoded apart lost up to 5 points of word error rate (bench/early_final.py)
    hears_whole_turn = True

    def __init__(
        self,
        model_path: str | Path,
        *,
        model_name: str | None = None,
        language: str | None = "en",
        grammar: Sequence[str] = (),
        low_confidence: float = DEFAULT_LOW_CONFIDENCE,
        partial_interval_s: float = PARTIAL_INTERVAL_S,
        partial_window_s: float = PARTIAL_WINDOW_S,
        word_timestamps: bool = True,
        backend: str = "auto",
    ) -> None:
        super().__init__(model_name=model_name or Path(model_path).name, language=language,
                         low_confidence=low_confidence)
        if backend not in BACKENDS:
            raise AsrError(f"unknown Moonshine backend {backend!r}: one of {', '.join(BACKENDS)}")
        self.model_path = model_folder(Path(model_path))
        self.arch = model_arch(self.model_path)
        self.partial_interval_s = partial_interval_s
        self.partial_window_s = partial_window_s
        if backend == "auto":
            # cheaper and leaner on tiny-en; libmoonshine 0.1.0 decodes base-en ~10x slower
            backend = "onnxruntime" if _has_onnxruntime() or self.arch == "base" else "libmoonshine"
        self.backend = backend
        self._decoder: _Decoder | OrtDecoder | None
        if backend == "onnxruntime":
            # base-en's arena holds ~260 MB after a decode unless it is shrunk (docs)
            base = self.arch == "base"
            self._decoder = OrtDecoder(self.model_path, shrink_arena=base,
                                       span=BASE_SPAN_S if base else None,
                                       retry_span=BASE_RETRY_SPAN_S if base else None)
        else:
            self._decoder = _Decoder(self.model_path, word_timestamps, self.arch)
        self._grammar: tuple[str, ...] = ()
        self._session: _MoonshineSession | None = None
        self._jobs: SimpleQueue[_Job | None] = SimpleQueue()
        self._worker = threading.Thread(target=self._work, name="edgevoice-moonshine", daemon=True)
        self._worker.start()
        self.set_grammar(grammar)

    @property
    def grammar(self) -> tuple[str, ...]:
        return self._grammar

    def set_grammar(self, phrases: Sequence[str]) -> None:
        if self._session is not None:
            raise AsrError("cannot change the grammar while a turn is being recognised")
        self._grammar = tuple(" ".join(normalise(p)) for p in phrases if normalise(p))

    def start(self) -> AsrSession:
        if self._session is not None:
            raise AsrError("a Moonshine session is already open; finish or cancel it first")
        self._session = _MoonshineSession(self)
        return self._session

    def transcribe(self, pcm: Pcm, *, chunk_samples: int = 1600) -> AsrResult:
        """A whole utterance in one decode: no partials to make on the way."""
        session = self.start()
        assert isinstance(session, _MoonshineSession)
        session.take(pcm)
        return session.finish()

    def warm_up(self, pcm: Pcm) -> None:
        """onnxruntime's first run allocates its arenas: pay that before the first turn."""
        self.decode(pcm).result()

    def decode(self, pcm: Pcm) -> Future[Decoded]:
        """Queue ``pcm`` for the worker thread; the future resolves to (text, words, end mark)."""
        future: Future[Decoded] = Future()
        if self._decoder is None:
            raise AsrError("the Moonshine engine is closed")
        self._jobs.put((pcm, future))
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            pcm, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                decoder = self._decoder
                if decoder is None:
                    raise AsrError("the Moonshine engine is closed")
                future.set_result(decoder.decode(pcm))
            except Exception as err:  # handed to whoever waits on the result
                future.set_exception(err)

    def _closed(self) -> None:
        self._session = None

    def close(self) -> None:
        self._jobs.put(None)
        self._worker.join(timeout=10)
        if self._decoder is not None:
            self._decoder.close()
            self._decoder = None


class _MoonshineSession(AsrSession):
    def __init__(self, engine: MoonshineEngine) -> None:
        self._engine = engine
        self._chunks: list[Pcm] = []
        self._samples = 0
        self._decoded_at = 0  # samples the last partial decode was started at
        self._partial_job: Future[Decoded] | None = None
        self._partial_job_from = 0  # the first sample that job decodes
        self._before = ""  # text of the turn before the partial window, when it slid on
        self._partial = ""
        self._open = True

    def _audio(self, start: int = 0) -> Pcm:
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]
        return self._chunks[0][start:] if self._chunks else np.zeros(0, dtype=np.int16)

    def accept(self, pcm: Pcm) -> str | None:
        if not self._open:
            raise AsrError("this recognition session is finished")
        self._chunks.append(np.asarray(pcm, dtype=np.int16))
        self._samples += len(pcm)
        changed = self._collect()
        job = self._partial_job
        interval = round(self._engine.partial_interval_s * SAMPLE_RATE)
        if (job is None and self._engine.partial_interval_s > 0
                and self._samples - self._decoded_at >= interval):
            self._start_partial()
        return changed

    def take(self, pcm: Pcm) -> None:
        """Audio for the final pass only (a whole recording: no partials)."""
        if not self._open:
            raise AsrError("this recognition session is finished")
        self._chunks.append(np.asarray(pcm, dtype=np.int16))
        self._samples += len(pcm)

    def _start_partial(self) -> None:
        window = round(self._engine.partial_window_s * SAMPLE_RATE)
        start = max(0, self._samples - window)
        if start > self._partial_job_from:
            # The window slides on: what it leaves behind stays said. A window's last
            # partial is the best reading of that audio this session has.
            self._before = self._partial
        self._partial_job_from = start
        self._decoded_at = self._samples
        self._partial_job = self._engine.decode(self._audio(start))

    def _collect(self) -> str | None:
        """The finished partial, if one finished and it changed the text."""
        job = self._partial_job
        if job is None or not job.done():
            return None
        self._partial_job = None
        try:
            text = job.result().text
        except AsrError as err:
            _LOGGER.warning("a Moonshine partial failed: %s", err)
            return None
        full = f"{self._before} {text}".strip() if self._partial_job_from else text
        if not full or full == self._partial:
            return None
        self._partial = full
        return full

    def finish(self) -> AsrResult:
        return self.finish_soon()()

    def finish_soon(self) -> Callable[[], AsrResult]:
        if not self._open:
            raise AsrError("this recognition session is finished")
        audio = self._audio()
        samples = self._samples
        grammar = self._engine.grammar
        threshold = self._engine.low_confidence
        job = self._engine.decode(audio)
        self._close()

        def result() -> AsrResult:
            text, words, mark, next_words = job.result()
            if grammar and words:
                phrase = closest_phrase(text.split(), grammar)
                if phrase is not None and phrase != text:
                    words = _respell(words, phrase)
                    text = phrase
            return make_result(text, words, threshold, samples, grammar, end_mark=mark,
                               next_words=next_words)

        return result

    def cancel(self) -> None:
        if self._open:
            self._close()

    def _close(self) -> None:
        self._open = False
        if self._partial_job is not None:
            self._partial_job.cancel()  # not started yet: skipped; running: its result unread
            self._partial_job = None
        self._engine._closed()


def _respell(words: Sequence[Word], phrase: str) -> list[Word]:
    """The phrase's words over the heard words' span, at their mean confidence."""
    target = phrase.split()
    start, end = words[0].start, words[-1].end
    conf = sum(w.conf for w in words) / len(words)
    step = (end - start) / len(target)
    return [Word(w, conf, round(start + i * step, 3), round(start + (i + 1) * step, 3))
            for i, w in enumerate(target)]
