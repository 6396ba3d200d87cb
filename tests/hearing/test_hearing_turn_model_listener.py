"""End of turn by the real smart-turn v3, through the listener as the daemon wires it: the
daemon's Silero VAD (``build_vad``), the endpointer with ``turn_model = "smart-turn"``
(``endpoint_settings``) and the real model on its own thread (``build_turn_judge``), fed
10 ms frames.

Each answer reaches the listener on the frame after the question (the test waits for the
model thread there): the quickest a device could have it. A slower answer only misses more
pauses, so this is the worst case for cutting a pause and a fixed, load-independent clock
for the test. (At 1x the answer's timing depended on the machine's load: piper's short
comma pause in "set a timer for, uh," was answered "complete" in time on an idle machine and
too late on a loaded one; the benchmark, ``bench/turn_completion.py``, counts such cuts.)

The fallback end silence is 1500 ms, so a turn that ends sooner than the fixed 600 ms was
ended by the model; and a 1 s pause that is not cut was the model's doing, not a timeout.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from support.hearing_audio import frames, piper_speech, place

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.events import SpeechStopped
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.turn_model import TurnJudge, TurnVerdict, TurnWorker
from edgevoice.device.assembly.hearing import build_turn_judge, build_vad, endpoint_settings
from edgevoice.device.config.schema import EndpointConfig, VadConfig
from edgevoice.models import ModelKind, ModelNotFoundError, resolve_model

FIXED_END_SILENCE_S = EndpointConfig().end_silence_ms / 1000  # what turn_model = off waits
CONFIG = EndpointConfig(turn_model="smart-turn", end_silence_ms=1500)


@pytest.fixture(scope="module")
def judge() -> Iterator[TurnWorker]:
    try:
        resolve_model(CONFIG.turn_model_name, ModelKind.TURN)
    except ModelNotFoundError as err:
        pytest.skip(f"smart-turn v3 is not on this machine: {err}")
    worker = build_turn_judge(CONFIG)
    assert isinstance(worker, TurnWorker)
    yield worker
    worker.close()


@dataclass
class Heard:
    stops: list[SpeechStopped]
    delivered: list[tuple[float, TurnVerdict]]  # (audio clock when the listener took it, answer)


class Watched(TurnJudge):
    """Hands the questions to the real worker (and its model thread); records its answers."""

    def __init__(self, real: TurnWorker) -> None:
        self._real = real
        self.taken: list[TurnVerdict] = []
        self.asked = False

    def ask(self, ticket: int, pcm: Pcm) -> None:
        self._real.ask(ticket, pcm)
        self.asked = True

    def verdicts(self) -> list[TurnVerdict]:
        got = self._real.verdicts()
        self.taken.extend(got)
        return got

    def close(self) -> None:
        pass


def hear(judge: TurnWorker, audio: Pcm) -> Heard:
    assert judge.wait_idle(10.0)
    judge.verdicts()  # nothing left over from another test
    watched = Watched(judge)
    listener = Listener(build_vad(VadConfig()), None, endpoint=endpoint_settings(CONFIG), turn_judge=watched)
    stops: list[SpeechStopped] = []
    delivered: list[tuple[float, TurnVerdict]] = []
    for frame in frames(audio):
        before = len(watched.taken)
        clock = listener.now
        stops.extend(e for e in listener.process(frame) if isinstance(e, SpeechStopped))
        delivered.extend((clock, v) for v in watched.taken[before:])
        if watched.asked:  # the model thread answers before the next frame
            watched.asked = False
            assert judge.wait_idle(10.0)
    return Heard(stops, delivered)


@pytest.mark.parametrize("sentence", ["set a timer for ten minutes.",
                                      "can you remind me to call my mother tomorrow morning."])
def test_a_finished_sentence_ends_complete_sooner_than_the_fixed_end_silence(
    judge: TurnWorker, sentence: str
) -> None:
    speech = piper_speech(sentence)
    scene = place([(0.5, speech)], 0.5 + len(speech) / SAMPLE_RATE + 2.5, snr_db=45)
    heard = hear(judge, scene.audio)
    assert len(heard.stops) == 1, heard.stops
    stop = heard.stops[0]
    assert stop.reason == "complete", (stop, heard.delivered)
    assert stop.t == pytest.approx(scene.spans[0][1], abs=0.1)  # the end is the end of the speech
    assert stop.detected - stop.t < FIXED_END_SILENCE_S, stop  # sooner than turn_model = off
    assert heard.delivered and max(v.probability for _, v in heard.delivered) >= CONFIG.turn_threshold


@pytest.mark.parametrize(("broken_off", "rest"), [("i'd like to book a table for, um,", "four people."),
                                                  ("can you remind me to call my, um,", "mother tomorrow.")])
def test_a_sentence_broken_off_with_a_filler_is_not_ended_in_the_pause(
    judge: TurnWorker, broken_off: str, rest: str
) -> None:
    first, second = piper_speech(broken_off), piper_speech(rest)
    resume = 0.5 + len(first) / SAMPLE_RATE + 1.0  # a 1 s pause: longer than the fixed 600 ms
    scene = place([(0.5, first), (resume, second)], resume + len(second) / SAMPLE_RATE + 2.5, snr_db=45)
    heard = hear(judge, scene.audio)
    pause_start = scene.spans[0][1]
    in_pause = [v for at, v in heard.delivered if pause_start < at < resume]
    # The model was asked in the pause and its answer came back before the person went on...
    assert in_pause, heard.delivered
    assert all(v.probability < CONFIG.turn_threshold for v in in_pause), in_pause
    # ...so the turn held through the pause, and ended once, after the rest of the sentence.
    assert len(heard.stops) == 1, heard.stops
    assert heard.stops[0].detected > resume + len(second) / SAMPLE_RATE
    assert heard.stops[0].t == pytest.approx(scene.spans[1][1], abs=0.1)
