"""pocketsphinx: the English fallback whose model a registry package ships.

No English vosk model is on the package registries, so a fresh device that has
none installed still hears English through pocketsphinx's bundled US English
model (``pocketsphinx-en-us`` in the model registry). Free-form recognition is
mediocre; phrase-list grammar mode (a JSGF grammar of the phrases) is exact.

Word confidence is pocketsphinx's per-word posterior probability; times come from
its 10 ms frames, counted from the start of the session.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from edgevoice.audio.asr import (
    DEFAULT_LOW_CONFIDENCE,
    AsrEngine,
    AsrError,
    AsrModelError,
    AsrResult,
    AsrSession,
    Word,
    make_result,
)
from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.errors import require

_LOGGER = logging.getLogger(__name__)

_FILLERS = re.compile(r"^(<s>|</s>|<sil>|\[.*\]|\+\+.*\+\+)$")
_VARIANT = re.compile(r"\(\d+\)$")
_GRAMMAR_SEARCH = "phrases"
BATCH_SAMPLES = 1600  # decode 100 ms at a time: partials at 10 Hz, a tenth of the calls
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
        ps: Any = require("pocketsphinx", "hearing", "The pocketsphinx speech recognizer")
        hmm, lm, dictionary = model_files(Path(model_path))
        try:
            self._decoder = ps.Decoder(hmm=str(hmm), lm=str(lm), dict=str(dictionary),
                                       samprate=SAMPLE_RATE, loglevel="FATAL")
        except (RuntimeError, ValueError) as err:
            raise AsrModelError(f"cannot load pocketsphinx model {model_path}: {err}") from err
        self.model_path = Path(model_path)
        self._frame_s = 1.0 / int(self._decoder.config["frate"])
        self._grammar: tuple[str, ...] = ()
        self._session: _PocketsphinxSession | None = None
        self.set_grammar(grammar)

    @property
    def grammar(self) -> tuple[str, ...]:
        return self._grammar

    def set_grammar(self, phrases: Sequence[str]) -> None:
        if self._session is not None:
            raise AsrError("cannot change the grammar while a turn is being recognised")
        kept: list[str] = []
        for phrase in phrases:
            words = phrase.lower().split()
            unknown = [w for w in words if self._decoder.lookup_word(w) is None]
            if unknown:
                _LOGGER.warning("pocketsphinx dictionary lacks %s: phrase %r cannot be recognised",
                                " ".join(unknown), phrase)
            elif words:
                kept.append(" ".join(words))
        if phrases and not kept:
            raise AsrError("none of the grammar phrases can be recognised by pocketsphinx's dictionary")
        if kept:
            body = " | ".join(kept)
            self._decoder.add_jsgf_string(
                _GRAMMAR_SEARCH, f"#JSGF V1.0;\ngrammar phrases;\npublic <phrase> = {body};\n"
            )
            self._decoder.activate_search(_GRAMMAR_SEARCH)
        else:
            self._decoder.activate_search(_FREE_SEARCH)
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
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._partial = ""
        self._open = True

    def _flush(self) -> None:
        if self._buffered:
            self._decoder.process_raw(b"".join(self._buffer), False, False)
            self._buffer, self._buffered = [], 0

    def accept(self, pcm: Pcm) -> str | None:
        if not self._open:
            raise AsrError("this recognition session is finished")
        self._buffer.append(pcm.astype("<i2").tobytes())
        self._buffered += len(pcm)
        self._samples += len(pcm)
        if self._buffered < BATCH_SAMPLES:
            return None
        self._flush()
        hyp = self._decoder.hyp()
        text = hyp.hypstr if hyp is not None else ""
        if text == self._partial:
            return None
        self._partial = text
        return text

    def finish(self) -> AsrResult:
        if not self._open:
            raise AsrError("this recognition session is finished")
        self._flush()
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
