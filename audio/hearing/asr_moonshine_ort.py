"""Moonshine's ``.ort`` encoder and decoder run by the Python ``onnxruntime`` itself.

Why a second way to run Moonshine: ``moonshine-cpp`` 0.1.4 bundles Moonshine **base-en**
(MIT; ``models/base-en/``: the same three files as tiny-en), but only in an x86-64 wheel
whose own ``libmoonshine`` needs its own onnxruntime, and ``moonshine-voice`` 0.1.0's
``libmoonshine`` decodes base-en ~10x slower than its tiny-en (measured: ~3 s of CPU for
3 s of audio, against ~0.3 s here). The Python ``onnxruntime`` (already loaded for the
Silero VAD and the piper voice, with aarch64 cp311 wheels) runs the same files: the
encoder once over the audio, then the merged decoder greedily, one token a step, with
its key/value cache (``use_cache_branch``). ``InferenceSession.run`` releases the GIL, so
on the engine's worker thread the front end goes on while it decodes; between steps
only an argmax over the vocabulary runs in Python.

What it weighed writing next. Where the greedy decode stops, the decoder's last step says
which words it nearly wrote instead of stopping: tiny-en learned from cleaned transcripts,
so a trailing "uh" or "and" that the audio holds is often left out of the text, yet "Uh"
or "And" takes up to 40 % there (docs/hearing.md, "The words it weighed and left out"). The
likeliest few such words are read on to their end, a few decoder steps each, and handed
back with their probabilities for the end of turn to weigh (:mod:`.turn_text`).

Memory: the quantized decoder keeps its weights as integers and widens them (Cast, Mul)
on every step, so onnxruntime's CPU arena grows by ~260 MB during a decode of base-en
(~470 MB with memory patterns on). ``shrink_arena`` hands that back at the end of every
run, at about twice the CPU; tiny-en's arena is small and not worth it. Figures in
docs/hearing.md.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.asr import AsrError, AsrModelError, Word
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

TOKENS_PER_SECOND = 6.5  # upstream's cap on output length: no more tokens than speech holds
MAX_PIECE_S = 20.0  # longer audio is decoded in pieces (see pieces)
_BOS, _EOS = 1, 2
_WORD_MARK = "\u2581"  # sentencepiece's word boundary
NEXT_WORD_CANDIDATES = 4  # the likeliest words after the stop that are read on
NEXT_WORD_MIN_P = 0.01  # a word less likely than this is not worth its decoder steps
NEXT_WORD_MAX_PIECES = 3  # pieces read after a candidate's first ("\u2581U" "h" is "Uh")


class Transcription(NamedTuple):
    """One greedy decode: the text written, and the words the decoder weighed writing next
    where it stopped (lower case, each with its probability, likeliest first)."""

    text: str
    next_words: tuple[tuple[str, float], ...] = ()


def load_tokens(path: Path) -> list[bytes]:
    """Moonshine's ``tokenizer.bin``: for each token id in turn, its length (one byte, or
    two as a 7-bit varint from 128 on) then its UTF-8 bytes."""
    data = path.read_bytes()
    tokens: list[bytes] = []
    i = 0
    while i < len(data):
        n = data[i]
        i += 1
        if n >= 128:
            n = (n & 0x7F) | (data[i] << 7)
            i += 1
        tokens.append(data[i:i + n])
        i += n
    if len(tokens) < 3 or tokens[_BOS] != b"<s>" or tokens[_EOS] != b"</s>":
        raise AsrModelError(f"{path} is not a Moonshine tokenizer")
    return tokens


def detokenize(tokens: list[bytes], ids: list[int]) -> str:
    raw = b"".join(tokens[i] for i in ids if 2 < i < len(tokens))
    return raw.decode("utf-8", errors="replace").replace(_WORD_MARK, " ").strip()


def session_options(ort: Any, threads: int) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Memory patterns plan one buffer per intermediate for the shapes last seen; every
    # turn has another length, and the plan for the widened weights doubles the arena.
    options.enable_mem_pattern = False
    options.log_severity_level = 3
    return options


class OrtMoonshine:
    """Text of 16 kHz float audio, decoded by onnxruntime sessions over Moonshine's files."""

    def __init__(self, folder: Path, *, threads: int = 1, shrink_arena: bool = False) -> None:
        ort: Any = require("onnxruntime", "hearing", "Moonshine through onnxruntime")
        options = session_options(ort, threads)
        try:
            self._encoder = ort.InferenceSession(str(folder / "encoder_model.ort"), options,
                                                 providers=["CPUExecutionProvider"])
            self._decoder = ort.InferenceSession(str(folder / "decoder_model_merged.ort"), options,
                                                 providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime's own errors (corrupt or foreign files)
            raise AsrModelError(f"cannot load Moonshine model {folder}: {err}") from err
        self._tokens = load_tokens(folder / "tokenizer.bin")
        self._run_options = ort.RunOptions()
        if shrink_arena:
            self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        encoder_inputs = {i.name for i in self._encoder.get_inputs()}
        self._encoder_mask = "attention_mask" in encoder_inputs  # tiny-en's export has one
        inputs = self._decoder.get_inputs()
        names = {i.name for i in inputs}
        self._decoder_mask = "encoder_attention_mask" in names
        self._past = sorted(n for n in names if n.startswith("past_key_values."))
        cache = next(i for i in inputs if i.name.startswith("past_key_values."))
        self._heads, self._head_dim = int(cache.shape[1]), int(cache.shape[3])
        self._outputs = [o.name for o in self._decoder.get_outputs()]
        # after the first step only the logits and the self-attention cache are fetched:
        # the cross-attention cache does not change, and copying it out on every step
        # would be done holding the GIL
        self._step_outputs = [n for n in self._outputs if n == "logits" or ".decoder." in n]
        if self._outputs[0] != "logits" or not self._past or "use_cache_branch" not in names:
            raise AsrModelError(f"{folder}: not a Moonshine merged decoder with a key/value cache")
        self.layers = len(self._past) // 4
        self.hidden = int(self._encoder.get_outputs()[0].shape[-1])

    def transcribe(self, audio: npt.NDArray[np.float32]) -> Transcription:
        """Greedy decode of ``audio`` (16 kHz float, -1..1), at most
        :data:`TOKENS_PER_SECOND` tokens a second."""
        batch = audio[np.newaxis, :]
        feed: dict[str, Any] = {"input_values": batch}
        mask = np.ones(batch.shape, dtype=np.int64)
        if self._encoder_mask:
            feed["attention_mask"] = mask
        next_words: tuple[tuple[str, float], ...] = ()
        try:
            hidden = self._encoder.run(None, feed, self._run_options)[0]
            step_feed: dict[str, Any] = {"encoder_hidden_states": hidden}
            if self._decoder_mask:
                step_feed["encoder_attention_mask"] = mask
            empty = np.zeros((1, self._heads, 0, self._head_dim), dtype=np.float32)
            for name in self._past:
                step_feed[name] = empty
            ids: list[int] = []
            token = _BOS
            for step in range(int(len(audio) / SAMPLE_RATE * TOKENS_PER_SECOND) + 2):
                logits = self._step(step_feed, token, first=step == 0)
                token = int(np.argmax(logits))
                if token == _EOS:
                    next_words = self._next_words(logits, step_feed)
                    break
                ids.append(token)
        except Exception as err:  # onnxruntime's RuntimeError/Fail: not a Python bug to hide
            raise AsrError(f"Moonshine failed to transcribe: {err}") from err
        return Transcription(detokenize(self._tokens, ids), next_words)

    def _step(self, feed: dict[str, Any], token: int, *, first: bool) -> npt.NDArray[np.float32]:
        """One decoder step on ``token``: the next token's logits; ``feed``'s cache moves on."""
        feed["input_ids"] = np.array([[token]], dtype=np.int64)
        feed["use_cache_branch"] = np.array([not first])
        names = self._outputs if first else self._step_outputs
        out = self._decoder.run(names, feed, self._run_options)
        for name, value in zip(names[1:], out[1:], strict=True):
            feed["past_key_values" + name[len("present"):]] = value
        logits: npt.NDArray[np.float32] = out[0][0, -1]
        return logits

    def _next_words(self, logits: npt.NDArray[np.float32], feed: dict[str, Any]
                    ) -> tuple[tuple[str, float], ...]:
        """The words the decoder weighed at its stop, each read on from its first piece."""
        weights = np.exp(logits.astype(np.float64) - float(np.max(logits)))
        probabilities = weights / float(np.sum(weights))
        words: dict[str, float] = {}  # "\u2581U" and "\u2581u" both read on to "uh": one word
        # the likeliest few, likeliest first: a partition, not a sort of the whole vocabulary
        # (0.05 ms against 0.43 here, on every decode's stop)
        top = np.argpartition(probabilities, -(NEXT_WORD_CANDIDATES + 1))[-(NEXT_WORD_CANDIDATES + 1):]
        for candidate in top[np.argsort(-probabilities[top])]:
            probability = float(probabilities[candidate])
            if probability < NEXT_WORD_MIN_P:
                break
            if int(candidate) > _EOS and self._piece(int(candidate)).startswith(_WORD_MARK):
                word = self._read_on(int(candidate), dict(feed))
                if word:
                    words[word] = words.get(word, 0.0) + probability
        return tuple(sorted(((w, round(p, 4)) for w, p in words.items()), key=lambda wp: -wp[1]))

    def _read_on(self, first: int, feed: dict[str, Any]) -> str:
        """The word that begins with piece ``first``: greedy until the next word, a mark or
        the end. ``feed`` is a copy: the cache arrays are replaced, never written into."""
        ids = [first]
        token = first
        for _ in range(NEXT_WORD_MAX_PIECES):
            token = int(np.argmax(self._step(feed, token, first=False)))
            piece = self._piece(token)
            if token <= _EOS or piece.startswith(_WORD_MARK) or not piece.replace("'", "").isalpha():
                break
            ids.append(token)
        heard = normalise(detokenize(self._tokens, ids))
        return heard[0] if heard else ""

    def _piece(self, token: int) -> str:
        return self._tokens[token].decode("utf-8", errors="replace") if token < len(self._tokens) else ""


def pieces(pcm: Pcm, begin: int, end: int) -> list[tuple[int, int]]:
    """``begin:end`` cut into pieces of at most :data:`MAX_PIECE_S`, each cut at the
    quietest 100 ms of the piece's second half. A turn is one piece; a recording given to
    ``edgevoice transcribe`` may be minutes long, which one greedy decode hears badly."""
    most = round(MAX_PIECE_S * SAMPLE_RATE)
    hop = SAMPLE_RATE // 10
    out: list[tuple[int, int]] = []
    while end - begin > most:
        lo = begin + most // 2
        windows = pcm[lo:begin + most - (begin + most - lo) % hop].astype(np.float64).reshape(-1, hop)
        cut = lo + int(np.argmin(np.mean(windows * windows, axis=1))) * hop + hop // 2
        out.append((begin, cut))
        begin = cut
    out.append((begin, end))
    return out


class OrtDecoder:
    """The engine's decoder (see ``asr_moonshine._Decoder``) over :class:`OrtMoonshine`:
    the same audio cut and word handling, called only from the engine's worker thread."""

    def __init__(self, folder: Path, *, threads: int = 1, shrink_arena: bool = False,
                 span: tuple[float, float] | None = None,
                 retry_span: tuple[float, float] | None = None) -> None:
        self._model: OrtMoonshine | None = OrtMoonshine(folder, threads=threads,
                                                        shrink_arena=shrink_arena)
        self._span = span  # (lead, tail) seconds kept around the loud part; None: defaults
        self._retry_span = retry_span  # a wider cut, when the first says nothing at all

    def decode(self, pcm: Pcm) -> Decoded:
        model = self._model
        if model is None:
            raise AsrError("the Moonshine engine is closed")
        begin, end = speech_span(pcm, *self._span) if self._span else speech_span(pcm)
        if end - begin < MIN_DECODE_SAMPLES:
            return NOTHING
        decoded = self._decode(model, pcm, begin, end)
        if not decoded.text and self._retry_span:
            decoded = self._decode(model, pcm, *speech_span(pcm, *self._retry_span))
        return decoded

    def _decode(self, model: OrtMoonshine, pcm: Pcm, begin: int, end: int) -> Decoded:
        texts: list[str] = []
        words: list[Word] = []
        mark = ""
        next_words: tuple[tuple[str, float], ...] = ()
        for start, stop in pieces(pcm, begin, end):
            audio: npt.NDArray[np.float32] = np.ascontiguousarray(pcm[start:stop], dtype=np.float32)
            audio /= np.float32(32768.0)
            written = model.transcribe(audio)
            heard = normalise(written.text)
            texts.extend(heard)
            if heard:  # the mark and the words weighed after the last words written
                mark, next_words = end_mark(written.text), written.next_words
            # no word-timing model for these exports: words spread over the audio decoded
            words.extend(spread_words(heard, start / SAMPLE_RATE, stop / SAMPLE_RATE))
        return Decoded(" ".join(texts), words, mark, next_words)

    def close(self) -> None:
        self._model = None
