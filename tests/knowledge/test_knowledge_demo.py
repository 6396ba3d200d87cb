"""``edgevoice demo --knowledge``: the check fails on a wrong answer, and the whole demo
(the daemon in the simulated room, the museum base) passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgevoice.device.cli import main
from edgevoice.device.events import EventType
from edgevoice.device.runtime.demo import MUSEUM_SCRIPT, DemoReport, Line, check, replies_by_turn

ROOT = Path(__file__).resolve().parents[2]


def conversation(*pairs: tuple[str, list[str]]) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    for heard, said in pairs:
        events.append({"type": str(EventType.TRANSCRIPT_USER), "text": heard})
        events += [{"type": str(EventType.TRANSCRIPT_AGENT), "text": s} for s in said]
    return events


def test_a_wrong_answer_fails_the_demo() -> None:
    script = (Line("How much are the tickets?", expect="14 euros"), Line("Can I bring my dog?",
                                                                         expect="assistance dogs"))
    events = conversation(("how much are the tickets", ["Adult tickets are", "14 euros."]),
                          ("can i bring my dog", ["Most people spend about two hours."]))
    assert replies_by_turn(events) == ["Adult tickets are 14 euros.", "Most people spend about two hours."]
    report = DemoReport(events=events, turns=[{"marks_s": {"first_played": 1.0}}] * 2)
    check(report, script)
    assert len(report.problems) == 1
    assert "line 2" in report.problems[0] and "assistance dogs" in report.problems[0]


def test_every_museum_line_expects_something() -> None:
    assert all(line.expect for line in MUSEUM_SCRIPT)


@pytest.mark.slow
def test_the_museum_demo_answers_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--knowledge", str(ROOT / "examples/knowledge/museum"), "--fast",
                 "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "demo passed" in out and "14 euros" in out and "don't know" in out
