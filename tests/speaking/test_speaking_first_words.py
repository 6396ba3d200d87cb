"""First words early: the wait cut, the size of the pieces after it, and cuts that never
fall inside a number, time, date, abbreviation, URL or markup (streamed in any chunking)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgevoice.device.speaking.cuts import safe_space
from edgevoice.device.speaking.markdown import SpeakableSplitter
from edgevoice.device.speaking.sentences import SentenceSplitter, split_sentences

OPENER = "The quick brown fox jumps over the lazy dog near the old river bank today"


def _splitter(**kw: float) -> SentenceSplitter:
    args: dict[str, float] = {"first_wait_ms": 250, "first_cut_words": 4, "follow_growth": 2.0,
                              "min_follow_chars": 40}
    args.update(kw)
    return SentenceSplitter(4, 300, 30, **args)  # type: ignore[arg-type]


def test_a_slow_opener_is_cut_at_a_word_boundary_once_the_wait_has_passed() -> None:
    splitter = _splitter()
    assert splitter.feed(OPENER[:40]) == []  # "The quick brown fox jumps over the lazy"
    assert splitter.waited(249.0) == []  # not yet
    # a cut needs a whole word after it (so not before "lazy", the last one received) and
    # none comes right after a function word ("the"): the last safe cut is after "over"
    assert splitter.waited(250.0) == ["The quick brown fox jumps over"]
    assert splitter.waited(900.0) == []  # only the first piece is cut on a wait
    assert splitter.feed(OPENER[40:] + ".") == []
    assert splitter.feed(" Then it rained.") == ["the lazy dog near the old river bank today."]
    assert splitter.flush() == ["Then it rained."]


def test_the_wait_needs_a_few_words_and_is_off_at_zero() -> None:
    splitter = _splitter(first_cut_words=4)
    splitter.feed("Well I think ")
    assert splitter.waited(1000.0) == []  # two words before the last whole one: too few
    assert _splitter(first_wait_ms=0).feed(OPENER) == []
    off = _splitter(first_wait_ms=0)
    off.feed(OPENER)
    assert off.waited(10_000.0) == []


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("We can meet you tomorrow at 10:30 a.m. ", "10:30 a.m."),
        ("It was signed on March 5 2024 ", "March 5 2024"),
        ("Please ask Dr. Smith ", "Dr. Smith"),
        ("It costs about $5 million ", "$5 million"),
        ("Our team has twenty five ", "twenty five"),
        ("The total is now one hundred and twenty ", "one hundred and twenty"),
        ("Read [the long guide here](https://example.com/a) ", "[the long guide here](https://example.com/a)"),
        ("Run `ls -la /tmp` ", "`ls -la /tmp`"),
        ("Your flight leaves as BA 117 ", "BA 117"),
        ("Then take the number 14 ", "number 14"),
    ],
)
def test_the_wait_cut_never_splits_a_unit(text: str, unit: str) -> None:
    splitter = _splitter(first_cut_words=1)
    splitter.feed(text)
    pieces = splitter.waited(300.0) + splitter.flush()
    assert len(pieces) == 2, pieces  # it did cut, before the unit (the last safe place)
    assert pieces[1].endswith(unit) and unit not in pieces[0], pieces


def test_a_code_or_a_label_keeps_its_number() -> None:
    # "Your flight BA | 117 leaves" was cut so with first_cut_words = 3
    assert not safe_space("BA", "117") and not safe_space("M25", "4") and not safe_space("gate", "5")
    assert not safe_space("Flight", "117,")
    assert safe_space("TV", "tonight") and safe_space("costs", "5") and safe_space("I", "5")


def test_a_clause_mark_inside_a_date_or_number_is_no_cut() -> None:
    out = split_sentences("On March 5, 2024 we flew to Paris, and it rained.", 4)
    assert out == ["On March 5, 2024 we flew to Paris,", "and it rained."]
    out = split_sentences("Jan. 5 is the day. Then we go.", 4)
    assert out == ["Jan. 5 is the day.", "Then we go."]
    # a comma after a number with a word next is a clause mark
    assert split_sentences("In 2024, we moved house and it was fine.", 4)[0] == "In 2024,"


def test_no_cut_before_a_connective_inside_a_number() -> None:
    text = "The answer you want is one hundred and twenty, give or take."
    # not before "and" (inside the number) but before "or"
    assert split_sentences(text, 1000, first_phrase_chars=10) == [
        "The answer you want is one hundred and twenty, give", "or take."]
    assert not safe_space("3", "and") and safe_space("sunny", "and")


def test_following_pieces_are_sized_so_synthesis_stays_ahead() -> None:
    text = ("Sure, here is what I found about the trip you asked about earlier this week "
            "because the weather and the trains both matter a great deal for the plan.")
    out = split_sentences(text, 4, follow_growth=2.0)
    assert out[0] == "Sure,"
    emitted = len(out[0])
    for piece in out[1:]:
        assert len(piece) <= max(40, 2 * emitted), (piece, out)
        emitted += len(piece)
    assert " ".join(out) == text
    assert len(out) >= 3
    # growth off: the rest of the sentence is one piece
    assert split_sentences(text, 4, follow_growth=0.0) == ["Sure,", text[6:]]


def test_speakable_splitter_passes_the_wait_on() -> None:
    splitter = SpeakableSplitter(4, 300, 30, first_wait_ms=100, first_cut_words=2)
    splitter.feed("**The quick** brown fox jumps ")
    assert splitter.emitted == 0
    assert splitter.waited(150.0) == ["The quick brown fox"]
    assert splitter.emitted == 1


@pytest.mark.parametrize("chunk", [1, 3, 1000])
def test_a_clause_mark_that_ends_an_emphasis_is_a_cut_after_the_emphasis(chunk: int) -> None:
    """LLMs open with "**Good news:** …": the colon is inside the emphasis, so the cut
    comes after its closing marker (whole markup to the speakable filter), in any chunking."""
    text = "**Good news:** your package was delivered at 11:15 this morning and left at the door."
    splitter = _splitter()
    pieces = [p for i in range(0, len(text), chunk) for p in splitter.feed(text[i:i + chunk])]
    pieces += splitter.flush()
    assert pieces[0] == "**Good news:**"
    assert " ".join(pieces) == text
    # not a cut: a mark inside an emphasis that goes on, or one not followed by a space
    for text in ("**Good news: your package** was delivered at 11:15 this morning.",
                 "**Note:**your package was delivered at 11:15 this morning."):
        splitter = _splitter()
        pieces = splitter.feed(text) + splitter.flush()
        assert not pieces[0].endswith(":") and not pieces[0].endswith(":**"), pieces


# --- properties ---------------------------------------------------------------------------

UNITS = ["10:30 a.m.", "March 5, 2024", "Jan. 5", "3,500", "3.5", "$5 million", "twenty five",
         "one hundred and twenty", "3 and 5", "7 pm", "Dr. Smith", "e.g. this", "5 o'clock",
         "20 km", "https://example.com/a,b", "[link text, here](https://x.org/p)", "`ls -la`",
         "**bold words here**", "**Good news:**", "BA 117", "gate 5"]
WORDS = ["the", "weather", "is", "sunny", "and", "but", "we", "go", "today", "because",
         "which", "so", "trains", "run", "late", "with", "it", "rains", "often"]
SUFFIXES = ["", "", "", "", ",", ".", ";", "?"]

_token = st.one_of(
    st.tuples(st.sampled_from(WORDS), st.sampled_from(SUFFIXES)).map(lambda t: (t[0] + t[1], False)),
    st.sampled_from(UNITS).map(lambda u: (u, True)),
)


def _text(tokens: list[tuple[str, bool]]) -> tuple[str, list[tuple[int, int]]]:
    text, spans = "", []
    for word, unit in tokens:
        if text:
            text += " "
        if unit:
            spans.append((len(text), len(text) + len(word)))
        text += word
    return text, spans


def _run(splitter: SentenceSplitter, text: str, waits: dict[int, float], sizes: list[int]) -> list[str]:
    """Feed ``text`` in chunks of ``sizes`` (cycled), also cut at every wait offset, where
    waited() is called with the given duration."""
    cuts = sorted({0, len(text), *(w for w in waits if 0 < w <= len(text))})
    out: list[str] = []
    index = 0
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        pos = lo
        while pos < hi:
            size = sizes[index % len(sizes)]
            out += splitter.feed(text[pos : min(hi, pos + size)])
            pos += size
            index += 1
        if hi in waits:
            out += splitter.waited(waits[hi])
    return out + splitter.flush()


def _aggressive() -> SentenceSplitter:
    return SentenceSplitter(1, 1000, 1, first_wait_ms=1, first_cut_words=1, follow_growth=1.0,
                            min_follow_chars=10)


_waits = st.dictionaries(st.integers(1, 250), st.sampled_from([0.0, 0.5, 1.0, 300.0]), max_size=4)


@settings(max_examples=150, deadline=None)
@given(tokens=st.lists(_token, min_size=1, max_size=25), waits=_waits,
       sizes=st.lists(st.integers(1, 9), min_size=1, max_size=8))
def test_same_pieces_in_any_chunking_with_the_same_waits(
        tokens: list[tuple[str, bool]], waits: dict[int, float], sizes: list[int]) -> None:
    text, _ = _text(tokens)
    whole = _run(_aggressive(), text, waits, [10_000])
    assert _run(_aggressive(), text, waits, sizes) == whole
    assert _run(_splitter(), text, waits, sizes) == _run(_splitter(), text, waits, [10_000])
    assert " ".join(whole).split() == text.split()  # nothing lost, nothing added


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(_token, min_size=1, max_size=25), waits=_waits,
       sizes=st.lists(st.integers(1, 9), min_size=1, max_size=8))
def test_no_piece_boundary_falls_inside_a_unit(
        tokens: list[tuple[str, bool]], waits: dict[int, float], sizes: list[int]) -> None:
    text, spans = _text(tokens)
    pieces = _run(_aggressive(), text, waits, sizes)
    pos, bounds = 0, []
    for piece in pieces:
        start = text.index(piece, pos)
        pos = start + len(piece)
        bounds.append(pos)
    for start, end in spans:
        inside = [b for b in bounds[:-1] if start < b < end]
        assert not inside, (text[start:end], pieces)
