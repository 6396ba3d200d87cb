"""What Moonshine is given and what its text becomes, shared by both ways of running it
(libmoonshine in :mod:`asr_moonshine`, the Python onnxruntime in :mod:`asr_moonshine_ort`):
the span of a turn's audio worth decoding, and its words as transcripts here write them."""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.asr import Word

SPAN_LEAD_S = 0.03  # audio kept before the first loud 10 ms (see speech_span)
SPAN_TAIL_S = 0.2  # and after the last
_QUIET_LEVEL = 30.0  # dB over one LSB: -60 dBFS, below which nothing is speech
MIN_DECODE_SAMPLES = SAMPLE_RATE // 10  # Moonshine needs ~0.1 s to say anything at all


class Decoded(NamedTuple):
    """One decode: the words as one text, the words with times, the mark after the last
    word, and the words the model weighed writing next when it stopped (with their
    probabilities; only the onnxruntime backend reads them)."""

    text: str
    words: list[Word]
    mark: str
    next_words: tuple[tuple[str, float], ...] = ()


NOTHING = Decoded("", [], "")
_WORD = re.compile(r"[^\w']+")
_AFTER_LAST_WORD = re.compile(r"\w[^\w]*$")


def speech_span(pcm: Pcm, lead_s: float = SPAN_LEAD_S, tail_s: float = SPAN_TAIL_S) -> tuple[int, int]:
    """The samples of ``pcm`` worth decoding: from a little before the first loud 10 ms to a
    little after the last. Moonshine makes words up out of leading silence ("you" before
    the turn's 300 ms pre-roll: 2 of 3 clear piper phrases got one) and hears the first
    word worse after it; cut there, they read right. Loud is 12 dB over the quietest
    tenth of the audio and within 35 dB of its peak, so room noise is not speech; audio
    with nothing loud (silence, steady noise) has no span at all."""
    frame = SAMPLE_RATE // 100
    count = len(pcm) // frame
    if count == 0:
        return 0, 0
    blocks = pcm[:count * frame].astype(np.float64).reshape(count, frame)
    level = 10 * np.log10(np.mean(blocks * blocks, axis=1) + 1.0)
    threshold = max(float(np.percentile(level, 10)) + 12.0, float(level.max()) - 35.0,
                    _QUIET_LEVEL)
    loud = np.flatnonzero(level > threshold)
    if len(loud) == 0:
        return 0, 0  # nothing but steady noise or silence: Moonshine would say "you"
    return (max(0, int(loud[0]) * frame - round(lead_s * SAMPLE_RATE)),
            min(len(pcm), (int(loud[-1]) + 1) * frame + round(tail_s * SAMPLE_RATE)))


def normalise(text: str) -> list[str]:
    """Moonshine writes cased, punctuated sentences; transcripts here are lower-case words
    (as vosk's and pocketsphinx's are), apostrophes kept ("what's")."""
    return [w for w in (_WORD.sub(" ", text.lower().replace("’", "'")).split()) if w.strip("'")]


def end_mark(text: str) -> str:
    """The punctuation Moonshine wrote after the last word: "," in "Apples, bananas,", "."
    after a finished sentence, "" when none. A mark that says more follows is part of what
    the end of turn reads (:mod:`.turn_text`); the transcript's words drop it."""
    found = _AFTER_LAST_WORD.search(text.replace("’", "'"))
    return "".join(found.group(0)[1:].split()) if found else ""


def spread_words(texts: list[str], start: float, end: float) -> list[Word]:
    if not texts:
        return []
    step = max(0.0, end - start) / len(texts)
    return [Word(w, 1.0, round(start + i * step, 3), round(start + (i + 1) * step, 3))
            for i, w in enumerate(texts)]
