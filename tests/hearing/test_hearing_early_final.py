"""Early final: the recognizer's final pass inside the silence that ends a turn (Silero
VAD, free-form pocketsphinx, piper speech)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from support.asr_watch import WatchedSession
from support.hearing_audio import frames, piper_speech, place
from support.silero_listener import ENDPOINT, heard, listen, silero_listener

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.asr import AsrResult, AsrSession
from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine
from edgevoice.audio.hearing.events import (
    EarlyTranscript,
    FinalTranscript,
    HearingEvent,
    PartialTranscript,
    SpeechResumed,
    SpeechStopped,
)
from edgevoice.audio.hearing.turn_model import TurnJudge, TurnVerdict
from edgevoice.models import ModelKind, resolve_model


class RecordingPocketsphinx(PocketsphinxEngine):
    """The real engine; each finished session's result is kept, in order."""

    def __init__(self, folder: Path, **kwargs: object) -> None:
        super().__init__(folder, **kwargs)  # type: ignore[arg-type]
        self.finished: list[AsrResult] = []

    def start(self) -> AsrSession:
        return WatchedSession(super().start(), on_finish=self.finished.append)


@pytest.fixture(scope="module")
def engine() -> Iterator[RecordingPocketsphinx]:
    asr = RecordingPocketsphinx(resolve_model("pocketsphinx-en-us", ModelKind.ASR).path)
    yield asr
    asr.close()


@pytest.fixture
def asr(engine: RecordingPocketsphinx) -> RecordingPocketsphinx:
    engine.finished.clear()
    return engine


def one_final(events: list[HearingEvent]) -> FinalTranscript:
    finals = [e for e in events if isinstance(e, FinalTranscript)]
    assert len(finals) == 1
    return finals[0]


def stopped(events: list[HearingEvent]) -> SpeechStopped:
    (stop,) = [e for e in events if isinstance(e, SpeechStopped)]
    return stop


@pytest.mark.parametrize("text", ["What is the weather like tomorrow?", "Set a timer for ten minutes."])
def test_the_final_pass_runs_in_the_closing_silence_and_hears_the_same_words(
    asr: RecordingPocketsphinx, text: str,
) -> None:
    speech = piper_speech(text)
    scene = place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 1.5, snr_db=40.0, seed=3)
    late = listen(asr, scene.audio, early_final_ms=0)
    (at_end,) = asr.finished
    asr.finished.clear()
    early = listen(asr, scene.audio, early_final_ms=300)
    (in_silence,) = asr.finished
    stop = stopped(early)
    # The pass ran on the turn's audio up to ~300 ms after the speech ended, not up to the
    # endpoint 600 ms after it (audio_s counts from the turn's audio start, pre-roll included).
    speech_s = stop.t - stop.audio_start
    assert in_silence.audio_s == pytest.approx(speech_s + 0.3, abs=0.05)
    assert at_end.audio_s == pytest.approx(stop.detected - stop.audio_start, abs=0.02)
    assert at_end.audio_s - in_silence.audio_s == pytest.approx(0.3, abs=0.05)
    # ...and the turn reads the same, with the same events in the same order.
    assert one_final(early).text == one_final(late).text != ""
    def turn_events(events: list[HearingEvent]) -> list[type]:
        return [type(e) for e in events if not isinstance(e, PartialTranscript | EarlyTranscript)]

    assert turn_events(early) == turn_events(late)
    # the early transcript (what a reply may be prepared on) is the turn's final text, told
    # before the turn ended; without an early final there is none
    (told,) = [e for e in early if isinstance(e, EarlyTranscript)]
    assert told.result().text == one_final(early).text and told.t < stop.detected
    assert not [e for e in late if isinstance(e, EarlyTranscript | SpeechResumed)]
    assert [w.word for w in one_final(early).words] == [w.word for w in one_final(late).words]


def test_speech_after_the_early_final_is_the_same_turns_next_words(asr: RecordingPocketsphinx) -> None:
    first, second = piper_speech("Tell me a story about a dragon."), piper_speech("What is the time?")
    resume_at = 0.8 + len(first) / SAMPLE_RATE + 0.45  # a 450 ms pause: past 300, short of 600
    scene = place([(0.8, first), (resume_at, second)], resume_at + len(second) / SAMPLE_RATE + 1.5,
                  snr_db=40.0, seed=5)
    events = listen(asr, scene.audio, early_final_ms=300)
    final = one_final(events)
    assert len(asr.finished) == 2  # one piece before the pause, one after
    before, after = asr.finished
    assert not before.empty and not after.empty
    assert final.text == f"{before.text} {after.text}"
    assert [w.word for w in final.words] == [w.word for w in before.words + after.words]
    # word times on the one audio clock: in order, the second piece's from where it was said
    starts = [w.start for w in final.words]
    assert starts == sorted(starts)
    first_word_after = final.words[len(before.words)]
    assert first_word_after.start == pytest.approx(scene.spans[1][0], abs=0.15)
    assert final.words[len(before.words) - 1].end <= scene.spans[0][1] + 0.15
    # partials after the pause carry what was said before it
    partials = [e.text for e in events if isinstance(e, PartialTranscript)]
    assert any(p.startswith(before.text + " ") for p in partials)
    assert partials[-1] == final.text
    # each pause told its early transcript; the speech that came back after the first said so
    told = [e for e in events if isinstance(e, EarlyTranscript | SpeechResumed)]
    assert [type(e) for e in told] == [EarlyTranscript, SpeechResumed, EarlyTranscript]
    assert isinstance(told[0], EarlyTranscript) and told[0].result().text == before.text
    assert isinstance(told[2], EarlyTranscript) and told[2].result().text == final.text
    assert told[1].t == pytest.approx(scene.spans[1][0], abs=0.2)


def test_early_final_off_keeps_one_pass_at_the_end(asr: RecordingPocketsphinx) -> None:
    first, second = piper_speech("Tell me a story about a dragon."), piper_speech("What is the time?")
    resume_at = 0.8 + len(first) / SAMPLE_RATE + 0.45
    scene = place([(0.8, first), (resume_at, second)], resume_at + len(second) / SAMPLE_RATE + 1.5,
                  snr_db=40.0, seed=5)
    events = listen(asr, scene.audio, early_final_ms=0)
    (only,) = asr.finished
    assert one_final(events).text == only.text


def test_a_phrase_grammar_is_matched_whole_at_the_turns_end(asr: RecordingPocketsphinx) -> None:
    asr.set_grammar(["turn on the light", "play some music"])
    try:
        speech = piper_speech("Turn on the light.")
        scene = place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 1.5, snr_db=40.0, seed=7)
        events = listen(asr, scene.audio, early_final_ms=300)
    finally:
        asr.set_grammar([])
    (only,) = asr.finished
    stop = stopped(events)
    assert only.audio_s == pytest.approx(stop.detected - stop.audio_start, abs=0.02)
    assert one_final(events).text == "turn on the light"


@pytest.mark.parametrize("text", ["What is the weather like tomorrow?"])
def test_with_a_turn_model_the_final_pass_runs_when_the_model_is_asked(
    asr: RecordingPocketsphinx, text: str,
) -> None:
    """The model may end the turn as soon as it answers (here it never calls it complete,
    so the turn runs to end_silence_ms): the final pass begins at its question, 200 ms into
    the pause, not at early_final_ms (300), so it is not on the path when the model ends it."""
    from edgevoice.audio.hearing.turn_model import TurnWorker

    speech = piper_speech(text)
    scene = place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 1.5, snr_db=40.0, seed=3)
    judge = TurnWorker(lambda _pcm: 0.0)
    try:
        listener = silero_listener(asr, endpoint=replace(ENDPOINT, turn_check_ms=200), early_final_ms=300,
                                   turn_judge=judge)
        events = [e for f in frames(scene.audio) for e in listener.process(f)]
    finally:
        judge.close()
    (in_silence,) = asr.finished
    stop = stopped(events)
    speech_s = stop.t - stop.audio_start
    assert in_silence.audio_s == pytest.approx(speech_s + 0.2, abs=0.05)
    assert one_final(events).text != ""


@pytest.mark.parametrize("hold_ms", [0, 1600])
def test_the_early_transcript_says_whether_the_text_hold_keeps_its_pause(
        asr: RecordingPocketsphinx, hold_ms: int) -> None:
    # speculation refuses words that read mid-thought only while a hold keeps the pause open
    speech = piper_speech("What is the weather like tomorrow?")
    scene = place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 2.5, snr_db=40.0, seed=3)
    listener = silero_listener(asr, endpoint=replace(ENDPOINT, hold_silence_ms=hold_ms), early_final_ms=300)
    events = heard(listener, scene.audio)
    (told,) = [e for e in events if isinstance(e, EarlyTranscript)]
    assert told.text_hold is (hold_ms > 0)


class SilentJudge(TurnJudge):
    """A turn model that is asked and never answers: the pause then ends on the short silence."""

    def ask(self, ticket: int, pcm: Pcm) -> None:
        pass

    def verdicts(self) -> list[TurnVerdict]:
        return []

    def close(self) -> None:
        pass


@pytest.mark.parametrize("model", [False, True])
def test_the_early_transcript_says_when_its_pause_can_end_the_turn_at_the_soonest(
        asr: RecordingPocketsphinx, model: bool) -> None:
    # speculation times its request by it: the short silence after the pause's start, or the
    # model's check when there is a model (it may end the turn then)
    speech = piper_speech("What is the weather like tomorrow?")
    scene = place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 2.5, snr_db=40.0, seed=3)
    endpoint = replace(ENDPOINT, turn_check_ms=200 if model else 0)
    events = heard(silero_listener(asr, endpoint=endpoint, early_final_ms=100,
                                   turn_judge=SilentJudge() if model else None), scene.audio)
    (told,) = [e for e in events if isinstance(e, EarlyTranscript)]
    stop = stopped(events)  # its t: where the speech stopped, the pause's start
    assert told.earliest_end_s == pytest.approx(stop.t + (0.2 if model else 0.6), abs=1e-6)
    assert told.t < told.earliest_end_s
    # the turn itself ended at the short silence (the model never answered)
    assert stop.detected == pytest.approx(stop.t + 0.6, abs=0.011)


def test_the_decode_starts_at_early_decode_ms_and_its_words_are_told_at_early_final_ms(
        asr: RecordingPocketsphinx) -> None:
    # the decode's time comes off the path to the reply; the request (told) waits as before
    speech = piper_speech("What is the weather like tomorrow?")
    scene = place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 1.5, snr_db=40.0, seed=3)
    told_at_300 = listen(asr, scene.audio, early_final_ms=300)
    (late_pass,) = asr.finished
    asr.finished.clear()
    events = heard(silero_listener(asr, early_final_ms=300, early_decode_ms=100), scene.audio)
    (early_pass,) = asr.finished
    stop = stopped(events)
    assert early_pass.audio_s == pytest.approx(stop.t - stop.audio_start + 0.1, abs=0.04)
    assert late_pass.audio_s - early_pass.audio_s == pytest.approx(0.2, abs=0.04)
    (told,) = [e for e in events if isinstance(e, EarlyTranscript)]
    (told_before,) = [e for e in told_at_300 if isinstance(e, EarlyTranscript)]
    assert told.t == told_before.t == pytest.approx(stop.t + 0.3, abs=0.04)
    assert told.result().text == one_final(events).text == one_final(told_at_300).text != ""


def test_a_pause_the_person_ends_before_early_final_ms_tells_nothing(asr: RecordingPocketsphinx) -> None:
    # the decode ran, but no words were handed over, so none are taken back (no request
    # was sent on them); the turn still reads whole
    first, second = piper_speech("Tell me a story about a dragon."), piper_speech("What is the time?")
    resume_at = 0.8 + len(first) / SAMPLE_RATE + 0.25
    scene = place([(0.8, first), (resume_at, second)], resume_at + len(second) / SAMPLE_RATE + 1.5,
                  snr_db=40.0, seed=5)
    events = heard(silero_listener(asr, early_final_ms=300, early_decode_ms=64), scene.audio)
    before, after = asr.finished  # the decode in the short pause, and the rest
    assert not before.empty and not after.empty
    assert one_final(events).text == f"{before.text} {after.text}"
    told = [e for e in events if isinstance(e, EarlyTranscript | SpeechResumed)]
    assert [type(e) for e in told] == [EarlyTranscript]
    assert isinstance(told[0], EarlyTranscript) and told[0].result().text == one_final(events).text
    assert told[0].t > scene.spans[1][1]
