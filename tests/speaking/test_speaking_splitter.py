"""The sentence splitter on tricky inputs, whole and streamed in any chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgevoice.device.speaking.sentences import SentenceSplitter, split_sentences

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

CASES: list[tuple[str, list[str]]] = [
    ("Hello there. How are you? I am fine!", ["Hello there.", "How are you?", "I am fine!"]),
    (
        "Dr. Smith met Mr. Jones at 10:30 a.m. on Monday. It cost 3.5 dollars.",
        ["Dr. Smith met Mr. Jones at 10:30 a.m. on Monday.", "It cost 3.5 dollars."],
    ),
    (
        "We visited the U.S. Then we left. Apples, pears, etc. are fruit.",
        ["We visited the U.S.", "Then we left.", "Apples, pears, etc. are fruit."],
    ),
    ("Use e.g. this one. Or i.e. that one.", ["Use e.g. this one.", "Or i.e. that one."]),
    (
        'He said "Stop." Then he left. (See below.) Next!',
        ['He said "Stop."', "Then he left.", "(See below.)", "Next!"],
    ),
    (
        "Steps:\n1. Open the box.\n2. Take it out\n- bullet one\n* bullet two",
        ["Steps:", "1. Open the box.", "2. Take it out", "- bullet one", "* bullet two"],
    ),
    ("你好。今天天气很好！你呢？", ["你好。", "今天天气很好！", "你呢？"]),
    ("Well... maybe not. Wait… Then go.", ["Well... maybe not.", "Wait…", "Then go."]),
    ("J. R. R. Tolkien wrote books. Version 2.0.1 is out.",
     ["J. R. R. Tolkien wrote books.", "Version 2.0.1 is out."]),
    ("**Done.** Next one.", ["**Done.**", "Next one."]),
    ("Really?! Yes.", ["Really?!", "Yes."]),
    ("It is 3,500 km. At 10:30 we go.", ["It is 3,500 km.", "At 10:30 we go."]),
    ("I counted to 3. Then I stopped.", ["I counted to 3.", "Then I stopped."]),
    ("## Weather today\nIt is sunny.", ["## Weather today", "It is sunny."]),
    ("No terminator at the end", ["No terminator at the end"]),
    ("   \n\n  ", []),
    ("Prof. Lee and St. Mary's. Done.", ["Prof. Lee and St. Mary's.", "Done."]),
    ("Tokyo（東京）です。次へ", ["Tokyo（東京）です。", "次へ"]),
    ("She said 'yes.' He nodded.", ["She said 'yes.'", "He nodded."]),
]


def _stream(text: str, sizes: list[int], splitter: SentenceSplitter | None = None) -> list[str]:
    splitter = splitter or SentenceSplitter()
    out: list[str] = []
    pos = 0
    index = 0
    while pos < len(text):
        size = sizes[index % len(sizes)] if sizes else 1
        out += splitter.feed(text[pos : pos + size])
        pos += size
        index += 1
    return out + splitter.flush()


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_whole_text(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_one_character_at_a_time(text: str, expected: list[str]) -> None:
    assert _stream(text, [1]) == expected


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), sizes=st.lists(st.integers(1, 12), min_size=1, max_size=20))
def test_random_chunks_same_sentences(case: tuple[str, list[str]], sizes: list[int]) -> None:
    text, expected = case
    assert _stream(text, sizes) == expected


@settings(max_examples=80, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab .,!?\n3:\"')…。—")), max_size=120),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=10),
)
def test_any_text_chunking_invariant(text: str, sizes: list[int]) -> None:
    whole = split_sentences(text, max_first_chars=10, max_chars=40)
    streamed = _stream(text, sizes, SentenceSplitter(max_first_chars=10, max_chars=40))
    assert streamed == whole
    # Nothing is lost: the sentences hold every non-space character, in order.
    assert "".join(whole).replace(" ", "").replace("\n", "") == "".join(text.split())


@settings(max_examples=80, deadline=None)
@given(
    text=st.lists(st.sampled_from(["a", "b", " ", ".", ",", "and", "so", "sand", "with", "\n"]),
                  max_size=40).map("".join),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=10),
)
def test_connective_cut_chunking_invariant(text: str, sizes: list[int]) -> None:
    whole = split_sentences(text, max_first_chars=4, max_chars=80, first_phrase_chars=6)
    streamed = _stream(text, sizes, SentenceSplitter(4, 80, first_phrase_chars=6))
    assert streamed == whole
    assert "".join(whole).replace(" ", "").replace("\n", "") == "".join(text.split())


def test_first_sentence_without_a_clause_mark_is_cut_before_a_connective() -> None:
    text = ("The weather today is sunny and warm with a high of twenty two degrees. "
            "Tomorrow it will rain and the wind will pick up.")
    out = split_sentences(text, max_first_chars=4, first_phrase_chars=30)
    # "and" at 25 characters is too early; "with" at 35 is the first cut after 30
    assert out == ["The weather today is sunny and warm",
                   "with a high of twenty two degrees.",
                   "Tomorrow it will rain and the wind will pick up."]
    # a word that only starts like a connective ("sandwich", "andes") is not one
    uncut = "I would like a very large sandwich andes today please."
    assert split_sentences(uncut, 4, first_phrase_chars=10) == [uncut]
    # a clause mark comes first when there is one; 0 turns the connective cut off
    assert split_sentences("Sure, the weather today is sunny with a high of twenty.", 4,
                           first_phrase_chars=10)[0] == "Sure,"
    assert split_sentences(text, 4, first_phrase_chars=0)[0] == text.split(". ", maxsplit=1)[0] + "."


def test_connective_cut_waits_for_the_whole_next_word() -> None:
    splitter = SentenceSplitter(4, 300, first_phrase_chars=10)
    assert splitter.feed("It is sunny today an") == []  # "an" may become "and" or "anyway"
    assert splitter.feed("yway it is") == []
    assert splitter.feed(" warm and") == []
    assert splitter.feed(" dry.") == ["It is sunny today anyway it is warm"]
    assert splitter.flush() == ["and dry."]


def test_first_sentence_emitted_before_second_arrives() -> None:
    splitter = SentenceSplitter()
    assert splitter.feed("The first sentence.") == []  # the end is not certain yet
    assert splitter.feed(" The sec") == ["The first sentence."]
    assert splitter.feed("ond one.") == []
    assert splitter.flush() == ["The second one."]


def test_long_first_sentence_cut_at_clause_after_max_first_chars() -> None:
    text = ("This is a rather long opening sentence, which keeps going with detail after detail, "
            "and only then ends. The second sentence is not cut, even if it is long, like this.")
    out = split_sentences(text, max_first_chars=50)
    assert out[0] == "This is a rather long opening sentence, which keeps going with detail after detail,"
    assert out[1] == "and only then ends."
    assert out[2].startswith("The second sentence is not cut, even")


def test_max_chars_cuts_runaway_sentence() -> None:
    text = "word " * 100
    out = split_sentences(text, max_first_chars=1000, max_chars=50)
    assert all(len(s) <= 50 for s in out)
    assert " ".join(out).split() == text.split()
