"""The pure rule that reads a transcript for a person still mid-thought (turn_text.py):
every word class, the stranding exception, the end marks, and properties over any text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgevoice.audio.hearing.asr import make_result
from edgevoice.audio.hearing.moonshine_audio import end_mark, normalise
from edgevoice.audio.hearing.text_reader import verdict_of
from edgevoice.audio.hearing.turn_text import (
    ARTICLES,
    CONJUNCTIONS,
    LEFT_OUT_WEIGHT,
    NOUN_WH,
    POSSESSIVES,
    PREPOSITIONS,
    SUBORDINATORS,
    Unfinished,
    mid_thought,
    read_text,
    unfinished_by,
    words_of,
)

pytestmark = pytest.mark.installed

ALWAYS = {**dict.fromkeys(ARTICLES, Unfinished.ARTICLE), **dict.fromkeys(POSSESSIVES, Unfinished.POSSESSIVE),
          **dict.fromkeys(CONJUNCTIONS, Unfinished.CONJUNCTION),
          **dict.fromkeys(SUBORDINATORS, Unfinished.SUBORDINATOR)}
FILLERS = ("um", "umm", "uh", "uhh", "uhm", "er", "erm", "ehm", "hmm", "hm")
PARTICLES = ("on", "off", "up", "down", "in", "out", "over", "about", "by", "through", "around",
             "back", "away", "along", "across", "under")
# Words a request may end on (content words and the function words left out on purpose).
ENDINGS = ("minutes", "kitchen", "please", "tomorrow", "it", "them", "her", "his", "so", "yet",
           "this", "that", "now", "today", "while", "since", "though", "like", "one", "two")
# Words that may come before the last one without licensing a stranded preposition.
PLAIN = ("set", "a", "timer", "turn", "the", "lights", "please", "how", "when", "why", "far", "is",
         "it", "remind", "me", "book", "table", "and", "my", "to", "for", "can", "you")


# --- the word classes -----------------------------------------------------------------
@pytest.mark.parametrize(("word", "why"), sorted(ALWAYS.items()))
def test_a_closed_class_word_that_needs_what_follows_is_mid_thought_after_anything(
        word: str, why: Unfinished) -> None:
    for before in ("", "what is", "who said", "set a timer for", "turn it on"):
        assert unfinished_by(f"{before} {word}") == why, (before, word)


@pytest.mark.parametrize("word", FILLERS)
def test_a_filler_at_the_end_is_mid_thought(word: str) -> None:
    assert unfinished_by(f"i'd like to book a table for {word}") == Unfinished.FILLER
    assert unfinished_by(word.upper()) == Unfinished.FILLER


@pytest.mark.parametrize("word", sorted(PREPOSITIONS))
def test_a_preposition_with_nothing_to_strand_it_is_mid_thought(word: str) -> None:
    assert unfinished_by(f"set a timer {word}") == Unfinished.PREPOSITION
    assert unfinished_by(f"how far is it from here {word}") == Unfinished.PREPOSITION  # how: no noun


@pytest.mark.parametrize("word", sorted(PREPOSITIONS))
@pytest.mark.parametrize("wh", sorted(NOUN_WH))
def test_a_noun_wh_word_before_a_preposition_may_have_stranded_it(word: str, wh: str) -> None:
    assert unfinished_by(f"{wh} is this {word}") is None


@pytest.mark.parametrize(("text", "held"), [
    ("where are you from", False), ("where is it at", False), ("where are we going to", False),
    ("where is the meeting with", True),  # "where" is a place: it does not stand for with's object
    ("where's it from", False), ("what's it for", False), ("who's it from", False),
])
def test_where_strands_only_the_place_prepositions(text: str, held: bool) -> None:
    assert mid_thought(text) is held


@pytest.mark.parametrize("word", PARTICLES)
def test_a_particle_is_never_held(word: str) -> None:
    assert unfinished_by(f"turn it {word}") is None
    assert unfinished_by(f"turn the music {word}") is None


@pytest.mark.parametrize("text", [
    "turn it on", "what is this for", "what are you up to", "where are you from",
    "turn the lights off", "turn the volume down", "speak up", "who is it for",
    "what are you looking at", "what is it made of", "which room is it in", "set a timer for ten minutes",
    "call her", "it's his", "i think so", "not yet", "for a while", "what's the weather like",
])
def test_complete_requests_that_end_in_a_particle_or_a_stranded_word_are_not_held(text: str) -> None:
    assert unfinished_by(text) is None
    assert unfinished_by(text.capitalize() + "?") is None


@pytest.mark.parametrize("text", [
    "it's been paid for",  # a passive strands without a wh-word
    "the song i was listening to",  # a relative clause without its pronoun
    "yes i'd like to",  # an elided verb after "to"
])
def test_the_known_false_holds_are_held(text: str) -> None:
    """What the rule gets wrong by construction (docs/hearing.md): these wait the hold."""
    assert unfinished_by(text) == Unfinished.PREPOSITION


# --- marks ------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "I need to buy apples, bananas,", "Set a timer for, um,", "wait;", "the list:", "and then -",
    "and then \u2013", "and then\u2014", "so\u2026", "well...", "Apples, bananas, \u201d",
])
def test_a_mark_that_says_more_follows_is_mid_thought(text: str) -> None:
    assert unfinished_by(text) == Unfinished.MARK


@pytest.mark.parametrize("text", ["Apples, bananas.", "Is it?", "Stop!", "Play the news.", "Tell me a joke"])
def test_a_closing_mark_or_none_leaves_the_words_to_decide(text: str) -> None:
    assert unfinished_by(text) is None


def test_the_engines_end_mark_counts_beside_normalised_words() -> None:
    assert unfinished_by("i need to buy apples bananas", ",") == Unfinished.MARK
    assert unfinished_by("i need to buy apples bananas", ".") is None
    assert unfinished_by("i need to buy apples bananas", "") is None


def test_no_words_is_not_mid_thought() -> None:
    assert read_text("").unfinished is None
    assert read_text(" ,").unfinished is None  # a mark with no words before it says nothing
    assert read_text("").last_word == ""


def test_words_keep_their_apostrophes_and_drop_case() -> None:
    assert words_of("I'd like What\u2019s ON") == ["i'd", "like", "what's", "on"]


# --- the recognizer's side: Moonshine's written text to words and a mark ---------------
@pytest.mark.parametrize(("written", "mark"), [
    ("I'd like to book a table for, um,", ","), ("Set a timer for.", "."), ("Apples, bananas, ", ","),
    ("What is this for?", "?"), ("and then \u2014", "\u2014"), ("Well...", "..."), ("", ""), ("...", ""),
])
def test_end_mark_is_what_follows_the_last_word(written: str, mark: str) -> None:
    assert end_mark(written) == mark


def test_a_result_carries_its_mark_to_the_reading_and_no_words_carry_none() -> None:
    written = "I need to buy apples, bananas,"
    result = make_result(" ".join(normalise(written)), [], 0.6, 16000, end_mark=end_mark(written))
    assert result.text == "i need to buy apples bananas" and result.end_mark == ","
    assert verdict_of(3, result).mid_thought and verdict_of(3, result).pause == 3
    assert make_result("", [], 0.6, 16000, end_mark=",").end_mark == ""


# --- properties over any text ----------------------------------------------------------
_word = st.sampled_from(PLAIN + ENDINGS + tuple(PREPOSITIONS) + PARTICLES + tuple(ALWAYS) + FILLERS)
_text = st.lists(_word, max_size=12).map(" ".join)


@given(_text, st.sampled_from(sorted(ALWAYS) + list(FILLERS)))
def test_any_text_ending_on_a_word_that_needs_more_is_mid_thought(before: str, last: str) -> None:
    assert mid_thought(f"{before} {last}")


@given(_text, st.sampled_from(ENDINGS + PARTICLES))
def test_any_text_ending_on_a_word_that_can_end_a_sentence_is_not(before: str, last: str) -> None:
    assert not mid_thought(f"{before} {last}")


@given(st.lists(st.sampled_from(PLAIN), max_size=10).map(" ".join), st.sampled_from(sorted(PREPOSITIONS)))
def test_a_preposition_after_words_with_no_wh_word_is_mid_thought(before: str, last: str) -> None:
    assert unfinished_by(f"{before} {last}") == Unfinished.PREPOSITION


@given(_text, st.sampled_from(["", ".", "?", "!", " ", '"', ")"]), st.booleans())
def test_case_and_a_closing_mark_never_change_the_reading(text: str, close: str, upper: bool) -> None:
    written = (text.upper() if upper else text) + close
    assert unfinished_by(written) == unfinished_by(text)


@given(_text, st.sampled_from([",", ";", ":", "-", "\u2014", "\u2026", "..."]))
def test_any_words_followed_by_an_open_mark_are_mid_thought(text: str, mark: str) -> None:
    assert mid_thought(f"{text}{mark}") is bool(words_of(text))


# --- words the recognizer weighed after its last and left out ---------------------------
@pytest.mark.parametrize(("text", "next_words", "why", "left_out"), [
    ("can you play", [("uh", 0.07), ("oh", 0.04)], Unfinished.FILLER, "uh"),
    ("send a message to my mother", [("and", 0.3)], Unfinished.CONJUNCTION, "and"),
    ("what is the weather going to be like", [("and", 0.28), ("i", 0.01)], Unfinished.CONJUNCTION, "and"),
    ("turn on the lights in", [("the", 0.1)], Unfinished.ARTICLE, "the"),
])
def test_a_left_out_word_weighed_enough_makes_the_pause_mid_thought(
        text: str, next_words: list[tuple[str, float]], why: Unfinished, left_out: str) -> None:
    reading = read_text(text, "", next_words)
    last = text.rsplit(maxsplit=1)[-1]
    assert (reading.unfinished, reading.left_out, reading.last_word) == (why, left_out, last)
    assert read_text(text).unfinished is None  # the written words alone could end the turn


def test_left_out_words_under_the_weight_change_nothing() -> None:
    assert read_text("can you play", "", [("uh", LEFT_OUT_WEIGHT * 0.99)]).unfinished is None
    assert read_text("can you play", "", [("uh", LEFT_OUT_WEIGHT)]).unfinished == Unfinished.FILLER


def test_the_weights_of_left_out_words_add_up() -> None:
    half = LEFT_OUT_WEIGHT * 0.51
    assert not mid_thought("can you play", "", [("uh", half)])
    assert not mid_thought("can you play", "", [("and", half)])
    reading = read_text("can you play", "", [("and", half), ("uh", half * 1.1)])
    assert reading.mid_thought and reading.left_out == "uh"  # named by the likelier


@pytest.mark.parametrize(("text", "next_words"), [
    ("who is it", [("for", 0.9)]),  # a stranded preposition ends the turn
    ("turn the lights", [("on", 0.9)]),  # a particle ends it
    ("what time is it in tokyo", [("what", 0.5), ("well", 0.3)]),  # a new sentence could start
    ("", [("uh", 0.9)]),  # nothing written: nothing to go on
])
def test_left_out_words_that_would_leave_the_turn_whole_never_hold(
        text: str, next_words: list[tuple[str, float]]) -> None:
    assert read_text(text, "", next_words).unfinished is None


def test_the_written_words_decide_first() -> None:
    reading = read_text("set a timer for", "", [("ten", 0.9)])
    assert (reading.unfinished, reading.left_out) == (Unfinished.PREPOSITION, "")


def test_a_result_carries_the_words_it_weighed_to_the_reading() -> None:
    result = make_result("can you play", [], 0.6, 16000, end_mark="?", next_words=[("uh", 0.07)])
    assert result.next_words == (("uh", 0.07),)
    assert verdict_of(1, result).unfinished == Unfinished.FILLER
    assert make_result("", [], 0.6, 16000, next_words=[("uh", 0.9)]).next_words == ()


@given(_text, st.lists(st.tuples(st.sampled_from(ENDINGS + PARTICLES), st.floats(0.0, 1.0)), max_size=5))
def test_left_out_words_that_could_end_a_sentence_never_change_the_reading(
        text: str, next_words: list[tuple[str, float]]) -> None:
    assert read_text(text, "", next_words).unfinished == unfinished_by(text)
