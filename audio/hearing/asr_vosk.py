"""vosk (Kaldi) streaming recognition with one warm recognizer.

A new ``KaldiRecognizer`` pays ~0.5 s on its first batch, so the engine makes one
at load (and after a grammar change), pays that cost then with a little silence,
and reuses it for every turn. vosk's word times run on from the recognizer's
creation across ``FinalResult``/``Reset``, so the engine counts the samples it has
fed and reports word times from the start of each session.

Phrase-list grammar mode (command devices) passes the phrases as vosk's grammar:
recognition is restricted to their words. Words the model does not know are
dropped by vosk; the engine logs them once at WARNING.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

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

BATCH_SAMPLES = 1600  # hand vosk 100 ms at a time: fewer calls, same latency as its own batches
_WARM_UP_SAMPLES = SAMPLE_RATE // 2


def _vosk() -> Any:
    vosk: Any = require("vosk", "hearing", "The vosk speech recognizer")
    vosk.SetLogLevel(-1)
    return vosk


class VoskEngine(AsrEngine):
    name = "vosk"

    def __init__(
        self,
        model_path: str | Path,
        *,
        model_name: str | None = None,
        language: str | None = None,
        grammar: Sequence[str] = (),
        low_confidence: float = DEFAULT_LOW_CONFIDENCE,
    ) -> None:
        super().__init__(model_name=model_name or Path(model_path).name, language=language,
                         low_confidence=low_confidence)
        vosk = _vosk()
        self.model_path = Path(model_path)
        try:
            self._model = vosk.Model(str(model_path))
        except Exception as err:  # vosk raises a bare Exception when a model fails to load
            raise AsrModelError(
                f"cannot load vosk model {model_path} ({err}); give the model's folder (with am/ "
                "and conf/ inside) or a registry name from `edgevoice models list`"
            ) from err
        self._vosk = vosk
        self._grammar: tuple[str, ...] = ()
        self._session: _VoskSession | None = None
        self._recognizer: Any = None
        self._fed = 0
        self._new_recognizer(tuple(grammar))

    @property
    def grammar(self) -> tuple[str, ...]:
        return self._grammar

    def set_grammar(self, phrases: Sequence[str]) -> None:
        if self._session is not None:
            raise AsrError("cannot change the grammar while a turn is being recognised")
        grammar = tuple(phrases)
        if grammar == self._grammar:
            return
        self._check_words(grammar)
        # SetGrammar keeps the recognizer; "[]" restores the model's own (free-form) graph.
        self._recognizer.SetGrammar(json.dumps(list(grammar), ensure_ascii=False))
        self._grammar = grammar
        if not grammar:
            self._warm_up()

    def _check_words(self, grammar: tuple[str, ...]) -> None:
        missing = sorted({word for phrase in grammar for word in phrase.split()
                          if self._model.vosk_model_find_word(word) < 0})
        if missing:
            _LOGGER.warning(
                "vosk model %s does not know these grammar words, which cannot be recognised: %s",
                self.model_name, " ".join(missing),
            )

    def _new_recognizer(self, grammar: tuple[str, ...]) -> None:
        if grammar:
            self._check_words(grammar)
            recognizer = self._vosk.KaldiRecognizer(
                self._model, SAMPLE_RATE, json.dumps(list(grammar), ensure_ascii=False)
            )
        else:
            recognizer = self._vosk.KaldiRecognizer(self._model, SAMPLE_RATE)
        recognizer.SetWords(True)
        self._recognizer = recognizer
        self._fed = 0
        self._grammar = grammar
        self._warm_up()

    def _warm_up(self) -> None:
        """Pay part of a fresh decoding graph's first-batch cost now rather than in a turn."""
        self.warm_up(np.zeros(_WARM_UP_SAMPLES, dtype=np.int16))

    def warm_up(self, pcm: Pcm) -> None:
        """Decode ``pcm`` and throw the result away. vosk expands its decoding graph lazily
        as speech visits it, so warming with real speech (the device's own TTS saying a
        sentence) takes most of the first-turn cost away; silence takes only part."""
        if self._session is not None:
            raise AsrError("cannot warm up while a turn is being recognised")
        self._recognizer.AcceptWaveform(pcm.astype("<i2").tobytes())
        self._recognizer.FinalResult()
        self._fed += len(pcm)

    def start(self) -> AsrSession:
        if self._session is not None:
            raise AsrError("a vosk session is already open; finish or cancel it first")
        self._session = _VoskSession(self)
        return self._session

    # Called by the session.
    def _accept(self, data: bytes, samples: int) -> bool:
        self._fed += samples
        return bool(self._recognizer.AcceptWaveform(data))

    def _closed(self) -> None:
        self._session = None

    def close(self) -> None:
        self._recognizer = None
        self._model = None


class _VoskSession(AsrSession):
    def __init__(self, engine: VoskEngine) -> None:
        self._engine = engine
        self._recognizer = engine._recognizer
        self._origin = engine._fed / SAMPLE_RATE  # vosk's time of this session's first sample
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._samples = 0
        self._words: list[Word] = []
        self._texts: list[str] = []
        self._partial = ""
        self._open = True

    def accept(self, pcm: Pcm) -> str | None:
        if not self._open:
            raise AsrError("this recognition session is finished")
        self._buffer.append(pcm.astype("<i2").tobytes())
        self._buffered += len(pcm)
        self._samples += len(pcm)
        if self._buffered < BATCH_SAMPLES:
            return None
        return self._flush()

    def _flush(self) -> str | None:
        if not self._buffered:
            return None
        data = b"".join(self._buffer)
        samples = self._buffered
        self._buffer, self._buffered = [], 0
        if self._engine._accept(data, samples):
            self._segment(self._recognizer.Result())
            partial = ""
        else:
            partial = json.loads(self._recognizer.PartialResult()).get("partial", "")
        text = " ".join([*self._texts, partial]).strip()
        if text == self._partial:
            return None
        self._partial = text
        return text

    def _segment(self, raw: str) -> None:
        data = json.loads(raw)
        text = data.get("text", "")
        if text:
            self._texts.append(text)
        for item in data.get("result", ()):
            self._words.append(Word(
                word=str(item["word"]), conf=float(item.get("conf", 1.0)),
                start=max(0.0, round(float(item["start"]) - self._origin, 3)),
                end=max(0.0, round(float(item["end"]) - self._origin, 3)),
            ))

    def finish(self) -> AsrResult:
        if not self._open:
            raise AsrError("this recognition session is finished")
        self._flush()
        self._segment(self._recognizer.FinalResult())
        self._close()
        return make_result(" ".join(self._texts), self._words, self._engine.low_confidence,
                           self._samples, self._engine.grammar)

    def cancel(self) -> None:
        if self._open:
            if self._buffered:
                self._engine._accept(b"".join(self._buffer), self._buffered)
            self._recognizer.Reset()
            self._close()

    def _close(self) -> None:
        self._open = False
        self._engine._closed()
