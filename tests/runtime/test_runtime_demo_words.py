"""The demo's check that each line was heard word for word (case and punctuation aside)."""

from __future__ import annotations

from edgevoice.device.runtime.demo import SCRIPT, spoken_words


def test_a_line_is_heard_when_its_words_are() -> None:
    assert spoken_words("Hello there.") == spoken_words("hello there") == ["hello", "there"]
    assert spoken_words("Sorry, what time is it now?") == ["sorry", "what", "time", "is", "it", "now"]
    assert spoken_words("What's the time?") == ["what's", "the", "time"]


def test_other_words_are_not_the_line() -> None:
    assert spoken_words("a load there") != spoken_words("Hello there.")
    assert spoken_words("what time is it") != spoken_words("Sorry, what time is it now?")
    assert all(spoken_words(line.text) for line in SCRIPT)
