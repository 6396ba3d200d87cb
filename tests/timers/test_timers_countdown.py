"""The LED ring's countdown of the device's own timers, from the book alone (no clock)."""

from __future__ import annotations

import pytest

from edgevoice.device.timers.model import TimerBook


def test_no_running_timer_shows_no_countdown() -> None:
    assert TimerBook().countdown(1000.0) is None
    book, _ = TimerBook().add("tea", 60, now=1000.0)
    book, _ = book.due(1060.0)  # ringing: the ring has its own pattern for that
    assert book.ringing and book.countdown(1061.0) is None


def test_the_countdown_is_the_fraction_left_of_the_timer_that_ends_first() -> None:
    book, _ = TimerBook().add("pasta", 600, now=1000.0)  # ends at 1600
    assert book.countdown(1000.0) == 1.0
    assert book.countdown(1150.0) == pytest.approx(0.75)
    # a shorter timer set later ends first (1300): it is the one shown, whatever was set first
    book, _ = book.add("tea", 200, now=1100.0)
    assert book.countdown(1200.0) == pytest.approx(0.5)
    assert book.countdown(1250.0) == pytest.approx(0.25)
    # tea rings: the ring's countdown goes on with pasta
    book, _ = book.due(1300.0)
    assert book.countdown(1300.0) == pytest.approx(0.5)
    book, _ = book.stop_ringing()
    assert book.countdown(1450.0) == pytest.approx(0.25)
    book, _ = book.cancel("pasta")
    assert book.countdown(1450.0) is None


def test_the_countdown_decreases_with_time_and_stays_between_zero_and_one() -> None:
    book, _ = TimerBook().add("timer", 10, now=100.0)
    shown = [book.countdown(100.0 + s) for s in range(0, 12)]
    assert shown == sorted(shown, reverse=True, key=lambda f: f or 0.0)
    assert len(set(shown[:11])) == 11  # it moves every second
    assert shown[10] == 0.0 and shown[11] == 0.0  # ended, not yet marked ringing
    assert book.countdown(50.0) == 1.0  # the wall clock stepped back: full, not over full


def test_a_timers_file_with_a_zero_duration_shows_an_empty_countdown() -> None:
    odd = {"name": "odd", "duration_s": 0, "ends_at": 2000.0}
    book = TimerBook.from_json({"version": 1, "timers": [odd]})
    assert book.countdown(1000.0) == 0.0
