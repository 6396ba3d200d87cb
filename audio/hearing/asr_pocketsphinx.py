"""pocketsphinx: the English fallback whose model a registry package ships.

No English vosk model is on the package registries, so a fresh device that has
none installed still hears English through pocketsphinx's bundled US English
model (``pocketsphinx-en-us`` in the model registry). Free-form recognition is
mediocre; phrase-list grammar mode (a JSGF grammar of the phrases) is exact.

Word confidence is pocketsphinx's per-word posterior probability; times come from
its 10 ms frames, counted from the start of the session.

Memory (``docs/runtime.md``, "Memory"): the bundled model's 135 000-word dictionary
and its trigram language model take ~88 MB once loaded. Free-form search can only
ever hypothesise words of the language model (72 500), so the decoder gets a
dictionary of just those (-11 MB, same results); in phrase-list grammar mode the
language model is not loaded at all and the dictionary holds only the phrases' words
(~3 MB in all). Words are taken from the full dictionary file as phrases need them,
and the language model is loaded when free-form recognition is asked for.
"""

from __future__ import annotations

import logging
import mmap
import os
import re
import struct
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

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
from edgevoice.errors import require

_LOGGER = logging.getLogger(__name__)

_FILLERS = re.compile(r"^(<s>|</s>|<sil>|\[.*\]|\+\+.*\+\+)$")
_VARIANT = re.compile(r"\(\d+\)$")
_GRAMMAR_SEARCH = "phrases"
# pocketsphinx's bindings hold the GIL while they decode (vosk's cffi ones do not): feed
# it 20 ms at a time, so the audio thread and the event loop wait at most a few tens of
# ms behind it (100 ms batches stalled them 50-80 ms; a real card underruns at that).
# end_utt() still holds it for its whole final pass (30-130 ms on this machine).
FEED_SAMPLES = 320
PARTIAL_SAMPLES = 1600  # look at the hypothesis every 100 ms: partials at 10 Hz
_FREE_SEARCH = "_default"


def model_files(folder: Path) -> tuple[Path, Path, Path]:
    """(acoustic model folder, language model, dictionary) in a pocketsphinx model folder:
    the folder itself or one level down holds the acoustic model (``mdef``)."""
    if (folder / "mdef").exists():
        hmm = folder
    else:
        candidates = sorted(p.parent for p in folder.glob("*/mdef"))
        if not candidates:
            raise AsrModelError(f"{folder} is not a pocketsphinx model: no acoustic model (mdef) in it")
        hmm = candidates[0]
    base = hmm.parent if hmm != folder else folder
    lms = sorted(p for p in base.glob("*.lm.bin") if "phone" not in p.name) + sorted(base.glob("*.lm"))
    dicts = sorted(base.glob("*.dict"))
    if not lms or not dicts:
        raise AsrModelError(f"{base} lacks a language model (*.lm.bin) or a dictionary (*.dict)")
    return hmm, lms[0], dicts[0]


def lm_vocabulary(lm: Path) -> frozenset[str] | None:
    """The words of a pocketsphinx binary trie language model (``*.lm.bin``), or None
    when the file is not one (an ARPA ``.lm``, another layout): its unigram count is in
    the header, its words are the file's tail, NUL-terminated, after their byte length."""
    magic = b"Trie Language Model"
    try:
        with open(lm, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data[:len(magic)] != magic or len(data) < len(magic) + 5:
                return None
            (count,) = struct.unpack_from("<I", data, len(magic) + 1)
            end = len(data) - 1  # the last word's terminator
            for _ in range(count - 1):
                end = data.rfind(b"\0", 0, end)
                if end < 4:
                    return None
            # ``end`` is the first word's terminator; the word begins after the length field
            for begin in range(end, max(4, end - 256), -1):
                if struct.unpack_from("<i", data, begin - 4)[0] == len(data) - begin:
                    break
            else:
                return None
            words = data[begin:].decode("utf-8", errors="replace").split("\0")[:-1]
    except (OSError, ValueError, struct.error):
        return None
    return frozenset(words) if len(words) == count else None


def read_dictionary(path: Path, keep: Iterable[str] | None = None) -> Iterator[tuple[str, str]]:
    """(word, phones) entries of a pocketsphinx dictionary, pronunciation variants
    (``word(2)``) included; only the words in ``keep`` when given."""
    wanted = None if keep is None else set(keep)
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            word, _, phones = line.strip().partition(" ")
            if phones and (wanted is None or _VARIANT.sub("", word) in wanted):
                yield word, phones.strip()


def _write_dictionary(entries: Iterable[tuple[str, str]]) -> tuple[str, int]:
    """A temporary dictionary file of ``entries``: (its path, how many)."""
    count = 0
    with tempfile.NamedTemporaryFile("w", suffix=".dict", delete=False, encoding="utf-8") as handle:
        for word, phones in entries:
            handle.write(f"{word} {phones}\n")
            count += 1
    return handle.name, count


_GRAMMAR_BEAMS: dict[str, float] = {"beam": 1e-80, "wbeam": 1e-60, "pbeam": 1e-80, "maxhmmpf": -1}


class PocketsphinxEngine(AsrEngine):
    name = "pocketsphinx"

    def __init__(
        self,
        model_path: str | Path,
        *,
        model_name: str | None = None,
        language: str | None = "en-US",
        grammar: Sequence[str] = (),
        low_confidence: float = DEFAULT_LOW_CONFIDENCE,
    ) -> None:
        super().__init__(model_name=model_name or Path(model_path).name, language=language,
                         low_confidence=low_confidence)
        self._ps: Any = require("pocketsphinx", "hearing", "The pocketsphinx speech recognizer")
        self.model_path = Path(model_path)
        self._hmm, self._lm, self._dictionary = model_files(self.model_path)
        self._decoder: Any = None
        self._free_form = False  # whether the decoder has the language model
        self._grammar: tuple[str, ...] = ()
        self._session: _PocketsphinxSession | None = None
        self._frame_s = 0.01
        self.set_grammar(grammar)

    @property
    def free_form_loaded(self) -> bool:
        """Whether the language model (free-form recognition) is in memory."""
        return self._free_form

    def _load(self, free_form: bool, words: Iterable[str] = ()) -> None:
        """A new decoder: with the language model and its words (free form), or with
        no language model and just ``words`` (grammar mode)."""
        vocabulary = lm_vocabulary(self._lm) if free_form else frozenset(words)
        dictionary, entries = _write_dictionary(read_dictionary(self._dictionary, vocabulary))
        del vocabulary
        # A grammar decoder searches a small graph: wide beams cost little there, and the
        # default ones prune the right phrase often enough to give an empty result (7 of 72
        # clean utterances in bench/aec/asr_check.py; 0 of 72 with these).
        beams = {} if free_form else _GRAMMAR_BEAMS
        try:
            self._decoder = self._ps.Decoder(hmm=str(self._hmm), lm=str(self._lm) if free_form else None,
                                             dict=dictionary, samprate=SAMPLE_RATE, loglevel="FATAL",
                                             **beams)
        except (RuntimeError, ValueError) as err:
            raise AsrModelError(f"cannot load pocketsphinx model {self.model_path}: {err}") from err
        finally:
            os.unlink(dictionary)
        self._free_form = free_form
        self._frame_s = 1.0 / int(self._decoder.config["frate"])
        _LOGGER.debug("pocketsphinx decoder: %s, %d dictionary entries",
                      "language model" if free_form else "grammar only", entries)

    def _add_words(self, words: set[str]) -> None:
        """Give the decoder the pronunciations of ``words`` it lacks (from the full dictionary)."""
        missing = {w for w in words if self._decoder.lookup_word(w) is None}
        if not missing:
            return
        entries = list(read_dictionary(self._dictionary, missing))
        for index, (word, phones) in enumerate(entries):
            self._decoder.add_word(word, phones, index == len(entries) - 1)

    @property
    def grammar(self) -> tuple[str, ...]:
        return self._grammar

    def set_grammar(self, phrases: Sequence[str]) -> None:
        if self._session is not None:
            raise AsrError("cannot change the grammar while a turn is being recognised")
        if not phrases:
            if not self._free_form:
                self._load(free_form=True)
            self._decoder.activate_search(_FREE_SEARCH)
            self._grammar = ()
            return
        wanted = {w for phrase in phrases for w in phrase.lower().split()}
        if self._decoder is None:
            self._load(free_form=False, words=wanted)
        else:
            self._add_words(wanted)
        kept: list[str] = []
        for phrase in phrases:
            words = phrase.lower().split()
            unknown = [w for w in words if self._decoder.lookup_word(w) is None]
            if unknown:
                _LOGGER.warning("pocketsphinx dictionary lacks %s: phrase %r cannot be recognised",
                                " ".join(unknown), phrase)
            elif words:
                kept.append(" ".join(words))
        if not kept:
            raise AsrError("none of the grammar phrases can be recognised by pocketsphinx's dictionary")
        body = " | ".join(kept)
        self._decoder.add_jsgf_string(
            _GRAMMAR_SEARCH, f"#JSGF V1.0;\ngrammar phrases;\npublic <phrase> = {body};\n"
        )
        self._decoder.activate_search(_GRAMMAR_SEARCH)
        self._grammar = tuple(kept)

    def start(self) -> AsrSession:
        if self._session is not None:
            raise AsrError("a pocketsphinx session is already open; finish or cancel it first")
        self._decoder.start_utt()
        self._session = _PocketsphinxSession(self)
        return self._session

    def _closed(self) -> None:
        self._session = None

    def _words(self) -> list[Word]:
        words = []
        for seg in self._decoder.seg():
            if _FILLERS.match(seg.word):
                continue
            words.append(Word(
                word=_VARIANT.sub("", seg.word),
                conf=min(1.0, max(0.0, float(seg.prob))),
                start=round(seg.start_frame * self._frame_s, 3),
                end=round((seg.end_frame + 1) * self._frame_s, 3),
            ))
        return words


class _PocketsphinxSession(AsrSession):
    def __init__(self, engine: PocketsphinxEngine) -> None:
        self._engine = engine
        self._decoder = engine._decoder
        self._samples = 0
        self._buffered = 0  # samples since the hypothesis was last looked at
        self._pending: list[bytes] = []  # not yet handed to the decoder
        self._pending_samples = 0
        self._partial = ""
        self._open = True

    def _feed(self) -> None:
        data = b"".join(self._pending)
        self._pending, self._pending_samples = [], 0
        for start in range(0, len(data), FEED_SAMPLES * 2):
            self._decoder.process_raw(data[start:start + FEED_SAMPLES * 2], False, False)

    def accept(self, pcm: Pcm) -> str | None:
        if not self._open:
            raise AsrError("this recognition session is finished")
        self._pending.append(pcm.astype("<i2").tobytes())
        self._pending_samples += len(pcm)
        if self._pending_samples >= FEED_SAMPLES:
            self._feed()
        self._buffered += len(pcm)
        self._samples += len(pcm)
        if self._buffered < PARTIAL_SAMPLES:
            return None
        self._buffered = 0
        hyp = self._decoder.hyp()
        text = hyp.hypstr if hyp is not None else ""
        if text == self._partial:
            return None
        self._partial = text
        return text

    def finish(self) -> AsrResult:
        if not self._open:
            raise AsrError("this recognition session is finished")
        self._feed()
        self._decoder.end_utt()
        hyp = self._decoder.hyp()
        words = self._engine._words() if hyp is not None else []
        self._close()
        text = " ".join(w.word for w in words)
        return make_result(text, words, self._engine.low_confidence, self._samples,
                           self._engine.grammar)

    def cancel(self) -> None:
        if self._open:
            self._decoder.end_utt()
            self._close()

    def _close(self) -> None:
        self._open = False
        self._engine._closed()
