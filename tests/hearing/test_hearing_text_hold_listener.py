"""The text hold through the whole hearing pipeline as the daemon wires it: the daemon's
Silero VAD (``build_vad``), the endpointer with the shipped ``[endpoint]`` defaults
(``endpoint_settings``), the shipped English recognizer (Moonshine tiny-en, ``asr.engine =
"auto"``) with its early final at the shipped ``early_final_ms``, and the real
:class:`TextWorker` thread reading its words. Piper speech in 10 ms frames.

Each reading reaches the listener on the frame after the early final began (the test waits
for the reader's thread there): the quickest a device could have the words, so a finished
turn's end is not delayed by the machine's load, and a broken-off one is held by what its
words say, not by words still on their way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from support.hearing_audio import frames, piper_speech, place

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing import turn_text
from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine
from edgevoice.audio.hearing.events import EarlyTranscript, FinalTranscript, SpeechStopped
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.text_reader import TextVerdict, TextWorker
from edgevoice.audio.hearing.turn_model import TurnJudge, TurnVerdict
from edgevoice.device.assembly.hearing import build_vad, choose_asr_model, endpoint_settings
from edgevoice.device.config.schema import AsrConfig, EndpointConfig, VadConfig
from edgevoice.models import ModelNotFoundError

SHIPPED = EndpointConfig()
SHORT_S = SHIPPED.end_silence_ms / 1000
HOLD_S = SHIPPED.hold_silence_ms / 1000
VAD_RELEASE_S = 0.15  # the VAD's speech decision outlasts the speech a little
# a turn broken off mid-thought: the fragment, the rest, the pause between them (s)
BROKEN = ("I'd like to book a table for, um,", "four people on Saturday.", 1.0)
# one whose filler the recognizer hears and leaves out of the text ("can you play")
LEFT_OUT = ("Can you play, uh,", "something by the Beatles.", 1.0)


@pytest.fixture(scope="module")
def engine(moonshine_engine: MoonshineEngine) -> Iterator[MoonshineEngine]:
    try:
        chosen = choose_asr_model(AsrConfig(), "en")
    except ModelNotFoundError as err:
        pytest.skip(f"no English recognizer here: {err}")
    assert chosen.engine == "moonshine" and chosen.name == "moonshine-tiny-en"  # what auto ships
    yield moonshine_engine


class AlwaysComplete(TurnJudge):
    """A turn model that calls every pause complete, answering on the next frame."""

    def __init__(self) -> None:
        self._asked: list[int] = []

    def ask(self, ticket: int, pcm: Pcm) -> None:
        self._asked.append(ticket)

    def verdicts(self) -> list[TurnVerdict]:
        done, self._asked = [TurnVerdict(t, 0.99, 0.0) for t in self._asked], []
        return done

    def close(self) -> None:
        pass


class Reader(TextWorker):
    """The real reader; keeps what it read."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[TextVerdict] = []

    def verdicts(self) -> list[TextVerdict]:
        got = super().verdicts()
        self.read.extend(got)
        return got


@dataclass
class Heard:
    stops: list[SpeechStopped]
    finals: list[FinalTranscript]
    read: list[TextVerdict]


def hear(engine: MoonshineEngine, audio: Pcm, config: EndpointConfig = SHIPPED,
         judge: TurnJudge | None = None) -> Heard:
    reader = Reader()
    listener = Listener(build_vad(VadConfig()), engine, endpoint=endpoint_settings(config),
                        early_final_ms=AsrConfig().early_final_ms, turn_judge=judge, text_reader=reader)
    events = []
    try:
        for frame in frames(audio):
            step = listener.process(frame)
            events.extend(step)
            if any(isinstance(e, EarlyTranscript) for e in step):
                assert reader.wait_idle(10.0)
    finally:
        reader.close()
    return Heard([e for e in events if isinstance(e, SpeechStopped)],
                 [e for e in events if isinstance(e, FinalTranscript)], reader.read)


def broken_off(fragment: str, rest: str, pause_s: float) -> tuple[Pcm, float, float]:
    """The fragment, a pause, the rest: the audio, where the pause begins and where it ends."""
    head, tail = piper_speech(fragment), piper_speech(rest)
    pause_at = 0.8 + len(head) / SAMPLE_RATE
    resume = pause_at + pause_s
    scene = place([(0.8, head), (resume, tail)], resume + len(tail) / SAMPLE_RATE + 2.5, snr_db=40.0,
                  seed=17)
    return scene.audio, pause_at, resume


def test_a_sentence_broken_off_after_a_filler_is_not_cut_by_its_1_s_pause(engine: MoonshineEngine) -> None:
    assert SHORT_S < 1.0 < HOLD_S  # the shipped short silence would cut this pause; the hold not
    audio, pause_at, resume = broken_off(*BROKEN)
    heard = hear(engine, audio)
    assert [v.mid_thought for v in heard.read][:1] == [True], heard.read
    (stop,) = heard.stops
    assert stop.t > resume and stop.reason == "silence"
    (final,) = heard.finals
    assert "table for" in final.text and final.text.endswith("four people on saturday"), final.text


def test_without_the_hold_the_shipped_short_silence_cuts_that_pause(engine: MoonshineEngine) -> None:
    """The check that the test above can fail: the same scene with the hold off is cut."""
    audio, pause_at, resume = broken_off(*BROKEN)
    stops = hear(engine, audio, EndpointConfig(hold_silence_ms=0)).stops
    assert len(stops) == 2 and pause_at < stops[0].detected < resume


def test_a_filler_the_recognizer_left_out_of_its_words_still_holds_the_pause(engine: MoonshineEngine) -> None:
    audio, _, resume = broken_off(*LEFT_OUT)
    heard = hear(engine, audio)
    # the last reading of the fragment is the long pause's (piper pauses at the comma too)
    last = [v for v in heard.read if v.text == "can you play"][-1]
    assert last.unfinished == turn_text.Unfinished.FILLER, heard.read
    (stop,) = heard.stops
    assert stop.t > resume and stop.reason == "silence"


def test_not_weighing_the_left_out_words_that_pause_is_cut(engine: MoonshineEngine,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The check that the test above can fail: the words read alone say "finished"."""
    monkeypatch.setattr(turn_text, "LEFT_OUT_WEIGHT", 2.0)  # more than probabilities add up to
    audio, pause_at, resume = broken_off(*LEFT_OUT)
    heard = hear(engine, audio)
    assert [v.mid_thought for v in heard.read if v.text == "can you play"] == [False, False], heard.read
    assert len(heard.stops) == 2 and pause_at < heard.stops[0].detected < resume


def test_a_finished_sentence_still_ends_at_the_short_silence(engine: MoonshineEngine) -> None:
    speech = piper_speech("Set a timer for ten minutes.")
    scene = place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 2.5, snr_db=40.0, seed=18)
    heard = hear(engine, scene.audio)
    assert [v.mid_thought for v in heard.read] == [False], heard.read
    (stop,) = heard.stops
    end = scene.spans[0][1]
    assert SHORT_S <= stop.detected - end <= SHORT_S + VAD_RELEASE_S
    assert [f.text for f in heard.finals] == ["set a timer for ten minutes"]


def test_mid_thought_words_overrule_a_turn_model_that_calls_the_pause_complete(
        engine: MoonshineEngine) -> None:
    config = EndpointConfig(turn_model="smart-turn", turn_check_ms=200, end_silence_ms=2000,
                            hold_silence_ms=SHIPPED.hold_silence_ms)
    # (not "Set a timer for": on an AMD EPYC host Moonshine tiny heard that fragment, cut 100
    # ms into its pause, as "it's at a time or four", which reads finished)
    audio, _, resume = broken_off(*BROKEN)
    (stop,) = hear(engine, audio, config, AlwaysComplete()).stops
    assert stop.t > resume and stop.reason == "complete"  # the model ended it, after the rest
    speech = piper_speech("Play some jazz in the kitchen.")
    scene = place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 2.5, snr_db=40.0, seed=19)
    (stop,) = hear(engine, scene.audio, config, AlwaysComplete()).stops
    assert stop.reason == "complete" and stop.detected - scene.spans[0][1] < 0.2 + VAD_RELEASE_S + 0.1


def test_the_turn_model_alone_would_have_cut_that_pause(engine: MoonshineEngine) -> None:
    """The check that the test above can fail: without the hold the same pause is cut."""
    config = EndpointConfig(turn_model="smart-turn", turn_check_ms=200, end_silence_ms=2000,
                            hold_silence_ms=0)
    audio, pause_at, resume = broken_off(*BROKEN)
    stops = hear(engine, audio, config, AlwaysComplete()).stops
    assert len(stops) == 2 and pause_at < stops[0].detected < resume
