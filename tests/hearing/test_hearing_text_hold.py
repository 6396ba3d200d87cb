"""The endpointer's text hold (pure): a pause whose words are being read, or were read as
mid-thought, is not ended by the short silence nor by the model's "complete"."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgevoice.audio.hearing.endpoint import (
    Endpointer,
    EndpointSettings,
    EndpointStep,
    EndReason,
    TurnEnd,
)

pytestmark = pytest.mark.installed

SR = 16000
FRAME_MS = 10
END_MS, HOLD_MS = 600, 1500


class Pause:
    """One second of speech, then silence in 10 ms frames; records the turn's end."""

    def __init__(self, settings: EndpointSettings) -> None:
        self.ep = Endpointer(settings)
        self.ends: list[TurnEnd] = []
        self.silence_ms = 0
        self.speak(1000)

    def take(self, step: EndpointStep) -> None:
        self.ends.extend(e for e in step.events if isinstance(e, TurnEnd))

    def speak(self, ms: int) -> None:
        for _ in range(ms // FRAME_MS):
            self.take(self.ep.push(np.zeros(SR * FRAME_MS // 1000, np.int16), True))
        self.silence_ms = 0

    def wait(self, until_ms: int) -> None:
        """Silence until the pause has lasted ``until_ms`` (or the turn ended)."""
        while self.silence_ms < until_ms and not self.ends:
            self.take(self.ep.push(np.zeros(SR * FRAME_MS // 1000, np.int16), False))
            self.silence_ms += FRAME_MS

    @property
    def ended_at_ms(self) -> int | None:
        """The pause's length when the turn ended (None: not ended)."""
        return self.silence_ms if self.ends else None


def settings(hold_ms: int = HOLD_MS, check_ms: int = 0) -> EndpointSettings:
    return EndpointSettings(end_silence_ms=END_MS, hold_silence_ms=hold_ms, turn_check_ms=check_ms,
                            min_speech_ms=100, pre_roll_ms=0)


def test_without_a_hold_the_words_change_nothing() -> None:
    p = Pause(settings(hold_ms=0))
    p.wait(300)
    p.ep.await_text(p.ep.pause)
    p.take(p.ep.text_verdict(p.ep.pause, True))
    p.wait(3000)
    assert p.ended_at_ms == END_MS and p.ends[0].reason == EndReason.SILENCE


def test_mid_thought_words_make_the_pause_wait_the_hold() -> None:
    p = Pause(settings())
    p.wait(300)
    p.ep.await_text(p.ep.pause)
    p.wait(350)
    p.take(p.ep.text_verdict(p.ep.pause, True))
    assert p.ep.held
    p.wait(3000)
    assert p.ended_at_ms == HOLD_MS
    (end,) = p.ends
    assert end.reason == EndReason.SILENCE
    assert end.detected_s - end.end_s == pytest.approx(HOLD_MS / 1000)


def test_words_that_can_end_the_turn_leave_the_short_silence() -> None:
    p = Pause(settings())
    p.wait(300)
    p.ep.await_text(p.ep.pause)
    p.wait(400)
    p.take(p.ep.text_verdict(p.ep.pause, False))
    p.wait(3000)
    assert p.ended_at_ms == END_MS


def test_words_read_late_end_the_turn_the_moment_they_are_read() -> None:
    p = Pause(settings())
    p.wait(300)
    p.ep.await_text(p.ep.pause)
    p.wait(900)  # past end_silence_ms: still waiting for the words
    assert not p.ends
    p.take(p.ep.text_verdict(p.ep.pause, False))
    assert p.ended_at_ms == 900 and p.ends[0].reason == EndReason.SILENCE


def test_words_never_read_end_the_pause_at_the_hold() -> None:
    p = Pause(settings())
    p.wait(300)
    p.ep.await_text(p.ep.pause)
    p.wait(5000)
    assert p.ended_at_ms == HOLD_MS


def test_a_hold_shorter_than_the_end_silence_never_shortens_it() -> None:
    p = Pause(settings(hold_ms=400))
    p.wait(300)
    p.ep.await_text(p.ep.pause)
    p.take(p.ep.text_verdict(p.ep.pause, True))
    p.wait(3000)
    assert p.ended_at_ms == END_MS


def test_an_answer_for_a_pause_the_person_broke_is_ignored_and_the_next_pause_starts_fresh() -> None:
    p = Pause(settings())
    p.wait(300)
    old = p.ep.pause
    p.ep.await_text(old)
    p.speak(500)  # the person went on
    assert p.ep.pause != old
    p.take(p.ep.text_verdict(old, True))
    assert not p.ep.held
    p.wait(3000)
    assert p.ended_at_ms == END_MS  # nothing awaited, nothing held: the short silence


def test_an_answer_nobody_awaited_is_ignored() -> None:
    p = Pause(settings())
    p.wait(300)
    p.take(p.ep.text_verdict(p.ep.pause, True))
    p.wait(3000)
    assert p.ended_at_ms == END_MS


def test_await_for_a_stale_pause_does_not_hold() -> None:
    p = Pause(settings())
    p.wait(300)
    p.ep.await_text(p.ep.pause - 1)
    p.wait(3000)
    assert p.ended_at_ms == END_MS


# --- with the turn model ----------------------------------------------------------------
def ask_model(p: Pause, check_ms: int = 200) -> int:
    """Silence up to the model's ask; its ticket."""
    ticket = None
    while ticket is None:
        step = p.ep.push(np.zeros(SR * FRAME_MS // 1000, np.int16), False)
        p.silence_ms += FRAME_MS
        p.take(step)
        ticket = step.check.ticket if step.check else None
    assert p.silence_ms == check_ms
    return ticket


def test_the_models_complete_is_overruled_by_mid_thought_words() -> None:
    p = Pause(settings(hold_ms=2000, check_ms=200))
    ticket = ask_model(p)
    p.ep.await_text(p.ep.pause)  # the early final starts at the ask
    p.wait(280)
    p.take(p.ep.text_verdict(p.ep.pause, True))
    p.wait(330)
    p.take(p.ep.verdict(ticket, 0.99))
    assert not p.ends
    p.wait(5000)
    assert p.ended_at_ms == 2000


def test_the_models_complete_before_the_words_waits_for_them() -> None:
    for mid, ended in ((False, 330), (True, 2000)):
        p = Pause(settings(hold_ms=2000, check_ms=200))
        ticket = ask_model(p)
        p.ep.await_text(p.ep.pause)
        p.wait(280)
        p.take(p.ep.verdict(ticket, 0.99))
        assert not p.ends  # deferred until the words are read
        p.wait(330)
        p.take(p.ep.text_verdict(p.ep.pause, mid))
        p.wait(5000)
        assert p.ended_at_ms == ended
        assert p.ends[0].reason == (EndReason.SILENCE if mid else EndReason.COMPLETE)


def test_the_models_complete_after_words_that_can_end_the_turn_ends_it() -> None:
    p = Pause(settings(hold_ms=2000, check_ms=200))
    ticket = ask_model(p)
    p.ep.await_text(p.ep.pause)
    p.wait(250)
    p.take(p.ep.text_verdict(p.ep.pause, False))
    p.wait(300)
    p.take(p.ep.verdict(ticket, 0.99))
    assert p.ended_at_ms == 300 and p.ends[0].reason == EndReason.COMPLETE


# --- every timing ----------------------------------------------------------------------
@given(
    end_ms=st.integers(1, 12).map(lambda k: 100 * k),
    hold_ms=st.sampled_from([0, 300, 800, 1500, 2500]),
    await_ms=st.integers(1, 25).map(lambda k: 50 * k),
    answer_after_ms=st.one_of(st.none(), st.integers(0, 40).map(lambda k: 50 * k)),
    mid=st.booleans(),
)
def test_the_pause_ends_where_the_rule_says_for_any_timing(
        end_ms: int, hold_ms: int, await_ms: int, answer_after_ms: int | None, mid: bool) -> None:
    p = Pause(EndpointSettings(end_silence_ms=end_ms, hold_silence_ms=hold_ms, min_speech_ms=100,
                               pre_roll_ms=0))
    p.wait(await_ms)
    if p.ends:  # ended before the words were asked for: the plain end silence
        assert p.ended_at_ms == end_ms
        return
    p.ep.await_text(p.ep.pause)
    if answer_after_ms is not None:
        p.wait(await_ms + answer_after_ms)
        if not p.ends:
            p.take(p.ep.text_verdict(p.ep.pause, mid))
    p.wait(20000)
    longest = max(hold_ms, end_ms)
    if hold_ms == 0:
        expected = end_ms
    elif answer_after_ms is None or await_ms + answer_after_ms >= longest:
        expected = longest  # never read in time: the hold bounds the wait
    elif mid:
        expected = longest
    else:
        expected = max(end_ms, await_ms + answer_after_ms)
    assert p.ended_at_ms == expected
    assert len(p.ends) == 1 and p.ends[0].detected_s - p.ends[0].end_s == pytest.approx(expected / 1000)
