"""What the person actually heard of a reply, from the speaker's play cursor.

:func:`heard_text` takes an utterance's segments in order
(:meth:`Speaker.progress`) and returns the segments fully played plus the played
part of the one playing when it stopped, cut at a word boundary: the last word
whose end sample has left the loudspeaker (``word_ends``), or, for a segment
without word timing, the words that fit in the played fraction of its text.
A word is heard only when all of it was played. Earcons are not text.
Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from edgevoice.audio.speaking.playback import SegmentProgress


def heard_part(text: str, total: int, played: int, word_ends: Sequence[tuple[int, int]] = ()) -> str:
    """The heard prefix of one segment's ``text`` after ``played`` of ``total`` samples
    (``total``: the samples the whole text takes, as synthesized)."""
    if played <= 0 or not text:
        return ""
    if played >= total:
        return text.strip()
    if word_ends:
        cut = 0
        for char_end, sample_end in word_ends:
            if sample_end <= played:
                cut = max(cut, char_end)
            else:
                break
        return text[:cut].strip()
    return _proportional_prefix(text, played / total)


def _proportional_prefix(text: str, fraction: float) -> str:
    chars = int(len(text) * fraction)
    if chars >= len(text):
        return text.strip()
    if " " not in text.strip():
        return text[:chars].strip()  # CJK and single words: per character
    # Whole words only: a word counts when its last character fits.
    prefix = text[:chars]
    if chars < len(text) and not text[chars].isspace():
        prefix = prefix[: prefix.rfind(" ") + 1] if " " in prefix else ""
    return prefix.strip()


def heard_text(progress: Iterable[SegmentProgress]) -> str:
    """Everything heard of one utterance, joined with spaces (see the module docstring)."""
    parts: list[str] = []
    for segment in progress:
        if segment.kind != "speech":
            continue
        # A dropped segment's ``total`` is what was written; judge it against what was queued.
        length = max(segment.total, segment.queued)
        part = heard_part(segment.text, length, segment.played, segment.word_ends)
        if part:
            parts.append(part)
        if not segment.complete:
            break
    return " ".join(parts)


def heard_sentences(progress: Iterable[SegmentProgress]) -> int:
    """How many speech segments were heard to the end."""
    count = 0
    for segment in progress:
        if segment.kind != "speech":
            continue
        if not segment.complete:
            break
        count += 1
    return count
