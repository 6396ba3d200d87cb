"""The endpointer: pure, exhaustively tested on decisions with known timing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgevoice.audio.hearing.endpoint import (
    Endpointer,
    EndpointSettings,
    EndpointState,
    EndReason,
    SpeechStarted,
    TurnEnd,
)

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

SR = 16000


class Stream:
    """Feeds an endpointer; the samples are their own index (mod 2**15), so any audio the
    endpointer returns can be checked against the exact span of the input it claims."""

    def __init__(self, endpointer: Endpointer) -> None:
        self.ep = endpointer
        self.pos = 0
        self.events: list[SpeechStarted | TurnEnd] = []
        self.turn_audio: list[np.ndarray] = []
        self.turns: list[np.ndarray] = []

    def push(self, ms: float, speech: bool, chunk_ms: float = 10) -> None:
        total = round(ms * SR / 1000)
        step = round(chunk_ms * SR / 1000)
        done = 0
        while done < total:
            n = min(step, total - done)
            pcm = (np.arange(self.pos, self.pos + n) % 32768).astype(np.int16)
            self.pos += n
            done += n
            self.collect(self.ep.push(pcm, speech))

    def collect(self, step: object) -> None:
        from edgevoice.audio.hearing.endpoint import EndpointStep
        assert isinstance(step, EndpointStep)
        if len(step.turn_audio):
            self.turn_audio.append(step.turn_audio)
        for event in step.events:
            self.events.append(event)
            if isinstance(event, TurnEnd):
                self.turns.append(np.concatenate(self.turn_audio) if self.turn_audio else np.zeros(0))
                self.turn_audio = []


def expected(start_s: float, end_s: float) -> np.ndarray:
    a, b = round(start_s * SR), round(end_s * SR)
    return (np.arange(a, b) % 32768).astype(np.int16)


def test_one_turn_has_exact_times_and_audio() -> None:
    s = Stream(Endpointer(EndpointSettings(min_speech_ms=100, end_silence_ms=600, pre_roll_ms=300)))
    s.push(1000, False)
    s.push(1000, True)
    s.push(1000, False)
    start, end = s.events
    assert start == SpeechStarted(start_s=1.0, detected_s=1.1)
    assert isinstance(end, TurnEnd)
    assert end.reason == EndReason.SILENCE
    assert end.start_s == 1.0
    assert end.end_s == 2.0
    assert end.detected_s == pytest.approx(2.6)
    assert end.audio_start_s == pytest.approx(0.7)
    np.testing.assert_array_equal(end.audio, expected(0.7, 2.6))
    np.testing.assert_array_equal(s.turns[0], end.audio)  # streamed pieces == the whole turn


def test_blip_shorter_than_min_speech_is_no_turn() -> None:
    s = Stream(Endpointer(EndpointSettings(min_speech_ms=100)))
    for _ in range(20):
        s.push(500, False)
        s.push(90, True)
    assert s.events == []


def test_pause_shorter_than_end_silence_keeps_the_turn() -> None:
    s = Stream(Endpointer(EndpointSettings(end_silence_ms=600)))
    s.push(500, False)
    s.push(500, True)
    s.push(590, False)
    s.push(500, True)
    s.push(700, False)
    assert [type(e) for e in s.events] == [SpeechStarted, TurnEnd]
    end = s.events[1]
    assert isinstance(end, TurnEnd)
    assert end.end_s == pytest.approx(2.09)


def test_pause_ms_counts_the_silence_after_confirmed_speech_only() -> None:
    s = Stream(Endpointer(EndpointSettings(min_speech_ms=100, end_silence_ms=600)))
    s.push(500, False)
    assert s.ep.pause_ms == 0.0  # no turn
    s.push(50, True)
    assert s.ep.pause_ms == 0.0  # onset, not yet a turn
    s.push(450, True)
    assert s.ep.pause_ms == 0.0  # speaking
    s.push(250, False)
    assert s.ep.pause_ms == pytest.approx(250.0)
    s.push(10, True)
    assert s.ep.pause_ms == 0.0  # speech came back
    s.push(600, False)
    assert s.ep.pause_ms == 0.0  # the turn ended: no pause to count
    assert [type(e) for e in s.events] == [SpeechStarted, TurnEnd]


def test_turn_tail_is_the_end_of_the_open_turns_audio() -> None:
    s = Stream(Endpointer(EndpointSettings(min_speech_ms=100, end_silence_ms=600, pre_roll_ms=300)))
    assert len(s.ep.turn_tail(100)) == 0  # no turn
    s.push(1000, False)
    s.push(1000, True)
    s.push(200, False)
    # the turn runs 0.7 s .. 2.2 s; its tail crosses the pushes' boundaries
    np.testing.assert_array_equal(s.ep.turn_tail(4000), expected(1.95, 2.2))
    np.testing.assert_array_equal(s.ep.turn_tail(10**6), expected(0.7, 2.2))  # all of it
    np.testing.assert_array_equal(s.ep.turn_tail(0), expected(2.2, 2.2))


def test_max_turn_cuts_a_long_turn() -> None:
    s = Stream(Endpointer(EndpointSettings(max_turn_s=2.0)))
    s.push(100, False)
    s.push(5000, True)
    ends = [e for e in s.events if isinstance(e, TurnEnd)]
    assert ends[0].reason == EndReason.MAX_TURN
    assert ends[0].end_s == pytest.approx(2.1)
    # Speech that goes on starts a new turn after the cut.
    assert isinstance(s.events[2], SpeechStarted)


def test_pre_roll_is_clipped_at_stream_start() -> None:
    s = Stream(Endpointer(EndpointSettings(pre_roll_ms=300)))
    s.push(100, False)
    s.push(300, True)
    s.push(700, False)
    end = s.events[-1]
    assert isinstance(end, TurnEnd)
    assert end.audio_start_s == 0.0
    np.testing.assert_array_equal(end.audio, expected(0.0, 1.0))


def test_no_auto_start_ignores_speech_until_a_turn_is_opened() -> None:
    ep = Endpointer(auto_start=False)
    s = Stream(ep)
    s.push(2000, True)
    s.push(500, False)
    assert s.events == []
    s.collect(ep.start_turn(pre_roll=True))
    assert ep.state == EndpointState.WAITING
    s.push(2000, False)  # silence before speech never ends an opened turn
    assert s.events == []
    s.push(400, True)
    s.push(300, False)
    s.collect(ep.end_turn())
    start, end = s.events
    assert isinstance(start, SpeechStarted) and start.start_s == pytest.approx(4.5)
    assert isinstance(end, TurnEnd) and end.reason == EndReason.FORCED
    assert end.end_s == pytest.approx(5.2)
    np.testing.assert_array_equal(end.audio, expected(2.2, 5.2))
    np.testing.assert_array_equal(s.turns[0], end.audio)


def test_opened_turn_times_out_without_speech() -> None:
    ep = Endpointer(auto_start=False)
    s = Stream(ep)
    s.push(100, False)
    s.collect(ep.start_turn(pre_roll=False, no_speech_timeout_ms=3000))
    s.push(5000, False)
    (end,) = s.events
    assert isinstance(end, TurnEnd)
    assert end.reason == EndReason.NO_SPEECH and end.start_s is None
    assert end.detected_s == pytest.approx(3.1)


def test_settle_ignores_the_tail_of_a_wake_word() -> None:
    ep = Endpointer(EndpointSettings(min_speech_ms=100, end_silence_ms=600), auto_start=False)
    s = Stream(ep)
    s.push(1000, True)  # the wake word, still going when the turn opens
    s.collect(ep.start_turn(pre_roll=False, no_speech_timeout_ms=5000, settle_ms=300))
    s.push(250, True)  # tail of the wake word: inside the settle window
    s.push(700, False)  # a pause after the wake word must not end the turn
    assert s.events == []
    s.push(800, True)
    s.push(700, False)
    start, end = s.events
    assert isinstance(start, SpeechStarted) and start.start_s == pytest.approx(1.95)
    assert isinstance(end, TurnEnd) and end.reason == EndReason.SILENCE
    assert end.end_s == pytest.approx(2.75)


def test_speech_running_through_settle_counts_after_it() -> None:
    ep = Endpointer(EndpointSettings(min_speech_ms=100), auto_start=False)
    s = Stream(ep)
    s.collect(ep.start_turn(pre_roll=False, settle_ms=300))
    s.push(1000, True)
    assert isinstance(s.events[0], SpeechStarted)
    assert s.events[0].start_s == pytest.approx(0.3)
    assert s.events[0].detected_s == pytest.approx(0.4)


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError):
        EndpointSettings(end_silence_ms=0)


chunks = st.lists(
    st.tuples(st.integers(min_value=1, max_value=900), st.booleans()), min_size=1, max_size=60
)


@settings(max_examples=150, deadline=None)
@given(
    chunks=chunks,
    min_speech=st.integers(0, 300),
    end_silence=st.integers(50, 1000),
    pre_roll=st.integers(0, 500),
    max_turn=st.floats(0.2, 5.0),
)
def test_invariants_hold_for_any_decisions(
    chunks: list[tuple[int, bool]], min_speech: int, end_silence: int, pre_roll: int, max_turn: float
) -> None:
    cfg = EndpointSettings(min_speech_ms=min_speech, end_silence_ms=end_silence,
                           pre_roll_ms=pre_roll, max_turn_s=max_turn)
    s = Stream(Endpointer(cfg))
    # Decisions on the sample clock, to check the events against.
    truth = np.zeros(0, dtype=bool)
    for samples, speech in chunks:
        truth = np.concatenate((truth, np.full(samples, speech)))
        s.push(samples * 1000 / SR, speech, chunk_ms=samples * 1000 / SR)
    open_start: SpeechStarted | None = None
    previous_end = 0
    turns = iter(s.turns)
    for event in s.events:
        if isinstance(event, SpeechStarted):
            assert open_start is None, "two starts without an end"
            open_start = event
            a, b = round(event.start_s * SR), round(event.detected_s * SR)
            assert b - a >= cfg.samples(min_speech)
            assert truth[a:b].all(), "speech start must cover only speech"
        else:
            assert open_start is not None, "an end without a start"
            assert event.start_s == open_start.start_s
            a = round(event.audio_start_s * SR)
            b = round(event.detected_s * SR)
            # The pre-roll reaches back pre_roll_ms, but never into the previous turn.
            assert a == max(previous_end, round(open_start.start_s * SR) - cfg.samples(pre_roll))
            previous_end = b
            np.testing.assert_array_equal(event.audio, (np.arange(a, b) % 32768).astype(np.int16))
            np.testing.assert_array_equal(next(turns), event.audio)
            if event.reason == EndReason.SILENCE:
                assert not truth[round(event.end_s * SR):b].any()
                assert b - round(event.end_s * SR) >= cfg.samples(end_silence)
            else:
                assert event.reason == EndReason.MAX_TURN
                assert b - round(open_start.start_s * SR) >= cfg.samples(max_turn * 1000)
            open_start = None
