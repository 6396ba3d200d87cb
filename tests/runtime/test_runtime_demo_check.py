"""edgevoice demo's verdict: a line heard as different words fails the run."""

from __future__ import annotations

from edgevoice.device.events import EventType
from edgevoice.device.runtime.demo import SCRIPT, DemoReport, Line, check, spoken_words

SCRIPT_2 = (Line("Hello there."), Line("Sorry, what time is it now?", barge_in_after_s=2.0))


def _report(heard: list[str]) -> DemoReport:
    report = DemoReport()
    for text in heard:
        report.events.append({"type": str(EventType.TRANSCRIPT_USER), "text": text})
        report.events.append({"type": str(EventType.REPLY_DONE), "status": "completed"})
        report.turns.append({"marks_s": {"first_played": 1.0}})
    report.events.append({"type": str(EventType.BARGE_IN)})
    report.events.append({"type": str(EventType.REPLY_DONE), "status": "interrupted"})
    return report


def test_the_same_words_pass_whatever_the_case_and_punctuation() -> None:
    report = _report(["hello there", "sorry what time is it now"])
    check(report, SCRIPT_2)
    assert report.problems == []


def test_a_line_heard_as_different_words_fails() -> None:
    report = _report(["oh there", "sorry what time is it now"])
    check(report, SCRIPT_2)
    assert report.problems == ["line 1 ('Hello there.') was heard as different words: 'oh there'"]
    assert not report.ok


def test_a_missing_transcript_still_fails() -> None:
    report = _report(["hello there"])
    check(report, SCRIPT_2)
    assert "1 of 2 lines were heard as turns" in report.problems


def test_spoken_words_keep_contractions_and_the_shipped_script_is_words() -> None:
    assert spoken_words("What's the time, now?") == ["what's", "the", "time", "now"]
    assert all(spoken_words(line.text) for line in SCRIPT)
