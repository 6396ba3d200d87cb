"""Trim the silence piper leaves at the edges of a piece cut inside a sentence (pure).

Piper renders every piece as if it were a whole utterance: ~80-110 ms of silence before
the first word and after the last. Between two sentences that is the natural pause;
at a cut inside a sentence (a first phrase spoken early) the two edges add up to
160-300 ms, which is heard as a hesitation. :func:`trim_edges` keeps at most
``keep_ms`` of that silence at the edge that meets a cut (bench/cut_pause.py).
"""

from __future__ import annotations

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm

_WINDOW = SAMPLE_RATE // 100  # 10 ms
_THRESHOLD = 32768 * 10 ** (-40 / 20)  # -40 dBFS
_ENDS = tuple(".!?…。！？．")
_CLOSERS = "\"'”’»)]}*_`」』）】"

WordEnds = tuple[tuple[int, int], ...]


def ends_sentence(text: str) -> bool:
    """Whether a piece ends a sentence (a terminator, closers aside), not a cut."""
    return text.rstrip().rstrip(_CLOSERS).endswith(_ENDS)


def _silent_windows(pcm: Pcm, *, from_end: bool) -> int:
    """Whole 10 ms windows of silence at the start (or end) of ``pcm``."""
    count = len(pcm) // _WINDOW
    for i in range(count):
        lo = len(pcm) - (i + 1) * _WINDOW if from_end else i * _WINDOW
        window = pcm[lo : lo + _WINDOW].astype(np.float64)
        if np.sqrt(np.mean(window * window)) >= _THRESHOLD:
            return i
    return count


def edge_silence_ms(pcm: Pcm, *, tail: bool) -> int:
    """Milliseconds of silence (whole 10 ms windows below -40 dBFS) at the start of
    ``pcm``, or at its end with ``tail``."""
    return _silent_windows(pcm, from_end=tail) * 10


def trim_edges(pcm: Pcm, word_ends: WordEnds, *, head: bool, tail: bool,
               keep_ms: int) -> tuple[Pcm, WordEnds]:
    """``pcm`` with its leading (``head``) and trailing (``tail``) silence cut down to
    ``keep_ms``; word end positions move with the head."""
    keep = SAMPLE_RATE * keep_ms // 1000
    start, end = 0, len(pcm)
    if head:
        start = max(0, _silent_windows(pcm, from_end=False) * _WINDOW - keep)
    if tail:
        end = min(len(pcm), len(pcm) - _silent_windows(pcm, from_end=True) * _WINDOW + keep)
    if start == 0 and end == len(pcm) or end <= start:
        return pcm, word_ends
    moved = tuple((char, min(max(0, sample - start), end - start)) for char, sample in word_ends)
    return pcm[start:end], moved
