"""The pure timer book, the phrases, and the atomic store."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from edgevoice.device.timers.model import TimerBook, TimerError
from edgevoice.device.timers.phrases import (
    TimerAction,
    TimerRequest,
    describe_left,
    parse_duration,
    parse_timer_request,
    spoken_duration,
)
from edgevoice.device.timers.store import load_book, save_book


def test_several_named_timers_ring_in_order_and_cancel_by_name() -> None:
    book = TimerBook()
    book, pasta = book.add("pasta", 600, now=1000.0)
    book, tea = book.add("tea", 180, now=1010.0)
    assert [t.name for t in book.running()] == ["tea", "pasta"]
    assert book.next_due() == tea
    assert pasta.remaining_s(1300.0) == 300.0
    book, rung = book.due(1190.0)
    assert [t.name for t in rung] == ["tea"] and book.ringing
    book, again = book.due(1191.0)
    assert again == ()  # ringing already
    book, stopped = book.stop_ringing()
    assert [t.name for t in stopped] == ["tea"] and not book.ringing
    book, gone = book.cancel("pasta")
    assert [t.name for t in gone] == ["pasta"] and book.timers == ()


def test_restarting_a_name_replaces_it_and_bad_timers_are_refused() -> None:
    book, _ = TimerBook().add("timer", 60, 0.0)
    book, _ = book.add("Timer", 120, 10.0)
    assert len(book.timers) == 1 and book.timers[0].ends_at == 130.0
    for seconds in (0.5, 25 * 3600):
        with pytest.raises(TimerError):
            book.add("x", seconds, 0.0)
    for i in range(19):
        book, _ = book.add(f"t{i}", 60, 0.0)
    with pytest.raises(TimerError, match="cancel one"):
        book.add("one too many", 60, 0.0)


def test_cancel_without_a_name() -> None:
    one, _ = TimerBook().add("pasta", 60, 0.0)
    assert one.cancel(None)[1][0].name == "pasta"
    two, _ = one.add("tea", 60, 0.0)
    assert two.cancel(None)[1] == ()  # which one? nothing cancelled
    ringing, _ = two.due(100.0)
    assert {t.name for t in ringing.cancel(None)[1]} == {"pasta", "tea"}


def test_a_timer_that_ended_while_the_device_was_off_rings_when_it_is_back() -> None:
    book, _ = TimerBook().add("timer", 60, now=0.0)
    restored = TimerBook.from_json(json.loads(json.dumps(book.to_json())))
    assert restored == book
    _, rung = restored.due(now=3600.0)
    assert [t.name for t in rung] == ["timer"]


@pytest.mark.parametrize(("text", "request_"), [
    ("set a timer for five minutes", TimerRequest(TimerAction.SET, None, 300)),
    ("Set a pasta timer for 10 minutes.", TimerRequest(TimerAction.SET, "pasta", 600)),
    ("start a timer called tea for two and a half minutes", TimerRequest(TimerAction.SET, "tea", 150)),
    ("set a timer for 1 hour and 30 minutes", TimerRequest(TimerAction.SET, None, 5400)),
    ("set a timer for half an hour", TimerRequest(TimerAction.SET, None, 1800)),
    ("timer for twenty five seconds", TimerRequest(TimerAction.SET, None, 25)),
    ("how long is left", TimerRequest(TimerAction.LEFT)),
    ("how much time is left on the pasta timer", TimerRequest(TimerAction.LEFT, "pasta")),
    ("cancel the timer", TimerRequest(TimerAction.CANCEL)),
    ("cancel the pasta timer", TimerRequest(TimerAction.CANCEL, "pasta")),
    ("what time is it", None), ("set the volume to five", None), ("tell me a story", None),
])
def test_timer_phrases(text: str, request_: TimerRequest | None) -> None:
    assert parse_timer_request(text) == request_


def test_spoken_durations() -> None:
    assert spoken_duration(3725) == "1 hour, 2 minutes and 5 seconds"
    assert spoken_duration(299.2) == "5 minutes"
    assert spoken_duration(1) == "1 second"
    assert parse_duration("two minutes") == 120
    book, _ = TimerBook().add("pasta", 600, 0.0)
    assert describe_left(book.timers, 30.0, None) == "The pasta timer has 9 minutes and 30 seconds left."
    assert describe_left(book.timers, 30.0, "tea") == "There is no tea timer."


def test_the_store_writes_atomically_and_survives_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "timers.json"
    assert load_book(path) == TimerBook()
    book, _ = TimerBook().add("pasta", 600, 1000.0)
    save_book(path, book)
    assert load_book(path) == book
    assert [p.name for p in path.parent.iterdir()] == ["timers.json"]  # no temporary left
    inode = os.stat(path).st_ino
    book2, _ = book.add("tea", 60, 1000.0)
    save_book(path, book2)
    assert os.stat(path).st_ino != inode  # replaced by rename, not rewritten in place
    path.write_text("{not json")
    assert load_book(path) == TimerBook()
