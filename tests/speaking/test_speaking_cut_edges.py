"""The pause at a cut: piper's edge silence trimmed on real bundled-voice audio."""

from __future__ import annotations

import numpy as np
from support.speaking import piper_engine

from edgevoice.audio.speaking.edges import ends_sentence, trim_edges


def _edge_ms(pcm: np.ndarray, *, tail: bool) -> int:
    """Leading (or trailing) 10 ms windows below -40 dBFS, in ms."""
    windows = pcm[: len(pcm) // 160 * 160].astype(np.float64).reshape(-1, 160)
    quiet = np.sqrt((windows**2).mean(axis=1)) < 32768 * 0.01
    if tail:
        quiet = quiet[::-1]
    return (int(np.argmin(quiet)) if not quiet.all() else len(quiet)) * 10


def test_trimming_a_cut_leaves_a_pause_under_80_ms() -> None:
    engine = piper_engine()
    left = engine.synthesize("I looked up the trains for tomorrow morning")
    right = engine.synthesize("from the central station to the airport.")
    raw = _edge_ms(left.pcm, tail=True) + _edge_ms(right.pcm, tail=False)
    assert raw > 100  # piper's own edges: heard as a hesitation at a cut
    a, a_ends = trim_edges(left.pcm, left.word_ends, head=False, tail=True, keep_ms=30)
    b, b_ends = trim_edges(right.pcm, right.word_ends, head=True, tail=False, keep_ms=30)
    assert _edge_ms(a, tail=True) + _edge_ms(b, tail=False) <= 80
    # only silence went: the speech is untouched, and word ends moved with the head
    assert np.array_equal(a, left.pcm[: len(a)])
    cut = len(right.pcm) - len(b)
    assert np.array_equal(b, right.pcm[cut:])
    assert [c for c, _ in b_ends] == [c for c, _ in right.word_ends]
    assert [s for _, s in b_ends] == [max(0, s - cut) for _, s in right.word_ends]
    assert a_ends == tuple((c, min(s, len(a))) for c, s in left.word_ends)


def test_edges_stay_where_nothing_is_trimmed() -> None:
    pcm = np.zeros(1600, dtype=np.int16)
    pcm[480:1120] = 8000  # 30 ms of silence each side
    same, ends = trim_edges(pcm, ((3, 1120),), head=False, tail=False, keep_ms=30)
    assert same is pcm and ends == ((3, 1120),)
    trimmed, ends = trim_edges(pcm, ((3, 1120),), head=True, tail=True, keep_ms=10)
    assert len(trimmed) == 640 + 2 * 160 and ends == ((3, 1120 - 320),)
    assert np.array_equal(trimmed[160:800], pcm[480:1120])


def test_a_sentence_end_is_not_a_cut() -> None:
    assert ends_sentence("It rained.") and ends_sentence('He said "Go."') and ends_sentence("Really?!")
    assert not ends_sentence("Sure,") and not ends_sentence("I looked up the trains")
