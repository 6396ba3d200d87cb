"""Asking the turn model ahead of its check (``turn_ask_ahead_ms``), through the listener with
the daemon's Silero VAD and piper speech: when it is asked, what it hears, and when its answer
counts. The model is a scripted judge (the real interface) whose answer comes a set time on
the audio clock after the question, so the timing under test is the listener's alone; the
real model's answers are the benchmark's (``bench/turn_completion.py``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from support.hearing_audio import frames, piper_speech, place

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.events import SpeechStopped
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.turn_ahead import padded_to
from edgevoice.audio.hearing.turn_model import WINDOW_SAMPLES, TurnJudge, TurnVerdict
from edgevoice.device.assembly.hearing import build_vad, endpoint_settings
from edgevoice.device.config.schema import EndpointConfig, VadConfig

# the model may end the turn at its check (224 ms into the pause); else 1.5 s of silence does
CONFIG = EndpointConfig(turn_model="smart-turn", turn_check_ms=200, end_silence_ms=1500, hold_silence_ms=0)
CHECK_S = 0.224  # turn_check_ms, at the next whole 32 ms Silero window
WINDOW_S = 0.032  # the endpointer's clock moves in Silero's windows: an answer counts at the next


class ScriptedJudge(TurnJudge):
    """Answers ``probability`` ``delay_s`` on the audio clock after each question."""

    def __init__(self, clock: Callable[[], float], probability: float, delay_s: float) -> None:
        self._clock = clock
        self._probability = probability
        self._delay_s = delay_s
        self.asked: list[tuple[float, int, Pcm]] = []  # (audio clock, ticket, what it heard)
        self._due: list[tuple[float, TurnVerdict]] = []

    def ask(self, ticket: int, pcm: Pcm) -> None:
        now = self._clock()
        self.asked.append((now, ticket, pcm))
        self._due = [(now + self._delay_s, TurnVerdict(ticket, self._probability, 1.0))]

    def verdicts(self) -> list[TurnVerdict]:
        ready = [v for at, v in self._due if at <= self._clock()]
        self._due = [(at, v) for at, v in self._due if at > self._clock()]
        return ready

    def close(self) -> None:
        pass


def hear(ahead_ms: int, probability: float, delay_s: float, config: EndpointConfig = CONFIG
         ) -> tuple[ScriptedJudge, SpeechStopped, float]:
    speech = piper_speech("Set a timer for ten minutes.")
    scene = place([(0.5, speech)], 0.5 + len(speech) / SAMPLE_RATE + 2.5, snr_db=45, seed=4)
    listener: Listener
    judge = ScriptedJudge(lambda: listener.now, probability, delay_s)
    listener = Listener(build_vad(VadConfig()), None, endpoint=endpoint_settings(config), turn_judge=judge,
                        turn_ask_ahead_ms=ahead_ms)
    stops = [e for f in frames(scene.audio) for e in listener.process(f) if isinstance(e, SpeechStopped)]
    assert len(stops) == 1, stops
    return judge, stops[0], scene.spans[0][1]


def test_asked_ahead_the_model_hears_the_pause_padded_to_the_check_and_decides_at_it() -> None:
    judge, stop, _ = hear(100, 1.0, delay_s=0.05)  # answered before the check comes
    ((asked_at, ticket, heard),) = judge.asked  # once, ahead; not again at the check
    pause_start = stop.t  # the end of the speech, as the endpointer counts the pause
    assert ticket < 0 and asked_at - pause_start == pytest.approx(0.128, abs=0.011)
    # what it heard: the audio to 128 ms into the pause, then silence up to the check's 224
    pad = round((CHECK_S - 0.128) * SAMPLE_RATE)
    assert len(heard) <= WINDOW_SAMPLES
    assert not heard[-pad:].any() and heard[-pad - 160:-pad].any()
    # its "complete" ended the turn at the check, not when it came in (~178 ms)
    assert stop.reason == "complete"
    assert stop.detected - pause_start == pytest.approx(CHECK_S, abs=0.011)


def test_an_answer_ahead_that_comes_after_the_check_counts_when_it_comes() -> None:
    judge, stop, _ = hear(100, 1.0, delay_s=0.25)  # in at ~378 ms, past the check
    ((asked_at, _, _),) = judge.asked
    assert stop.reason == "complete"
    assert stop.detected - asked_at == pytest.approx(0.25, abs=WINDOW_S + 0.001)


def test_without_asking_ahead_the_model_is_asked_at_the_check_on_what_was_said() -> None:
    judge, stop, _ = hear(0, 1.0, delay_s=0.05)
    ((asked_at, ticket, heard),) = judge.asked
    assert ticket > 0 and asked_at - stop.t == pytest.approx(CHECK_S, abs=0.011)
    assert heard[-160:].any()  # the room's own pause, no silence added
    assert stop.detected - asked_at == pytest.approx(0.05, abs=WINDOW_S + 0.001)


def test_an_answer_of_not_done_leaves_the_pause_to_the_fixed_silence() -> None:
    _, stop, _ = hear(100, 0.0, delay_s=0.05)
    assert stop.reason == "silence" and stop.detected - stop.t == pytest.approx(1.5, abs=0.04)


def test_with_the_shipped_settings_a_slow_decision_still_ends_a_finished_turn_at_the_check() -> None:
    # smart-turn on, everything else as shipped: the model is asked ahead, so a decision
    # that takes 150 ms (one here; 3-5x that on a Pi 4) is in before the check (320 ms
    # into the pause) instead of adding its time after it
    shipped = EndpointConfig(turn_model="smart-turn", hold_silence_ms=0)
    judge, stop, _ = hear(shipped.turn_ask_ahead_ms, 1.0, delay_s=0.15, config=shipped)
    ((asked_at, ticket, _),) = judge.asked
    assert ticket < 0 and asked_at - stop.t < 0.2
    assert stop.reason == "complete"
    assert stop.detected - stop.t == pytest.approx(0.32, abs=0.011)


def test_padding_adds_silence_and_keeps_the_models_window() -> None:
    tail = np.arange(1, WINDOW_SAMPLES + 1, dtype=np.int16)
    out = padded_to(tail, 1000)
    assert len(out) == WINDOW_SAMPLES and not out[-1000:].any()
    assert np.array_equal(out[:-1000], tail[1000:])
    assert np.array_equal(padded_to(tail[:50], 0), tail[:50])
