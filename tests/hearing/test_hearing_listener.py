"""The whole hearing pipeline (Silero VAD, endpointer, wake word, pocketsphinx) on piper speech."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from support.hearing_audio import frames, piper_speech, place

from edgevoice.audio.frames import Pcm
from edgevoice.audio.hearing.asr import AsrEngine, AsrResult, AsrSession, make_result
from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine
from edgevoice.audio.hearing.endpoint import EndpointSettings, SpeechStarted
from edgevoice.audio.hearing.events import (
    EarlyTranscript,
    FinalTranscript,
    HearingEvent,
    PartialTranscript,
    SpeechResumed,
    SpeechStopped,
    TurnDiscarded,
    WakeWordDetected,
)
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.modes import ButtonMode, ListenMode
from edgevoice.audio.hearing.vad import QuietGate, VoiceActivity
from edgevoice.audio.hearing.vad_silero import SileroVad
from edgevoice.audio.hearing.wakeword import WakeWordDetection, WakeWordDetector
from edgevoice.models import ModelKind, resolve_model

COMMANDS = ("turn on the light", "turn off the light", "what is the time", "play some music")


@pytest.fixture(scope="module")
def asr() -> Iterator[PocketsphinxEngine]:
    engine = PocketsphinxEngine(resolve_model("pocketsphinx-en-us", ModelKind.ASR).path,
                                grammar=COMMANDS)
    yield engine
    engine.close()


def vad() -> VoiceActivity:
    return VoiceActivity(SileroVad(resolve_model("silero-vad", ModelKind.VAD).path))


def wakeword() -> WakeWordDetector:
    return WakeWordDetector(resolve_model("okay_nabu", ModelKind.WAKEWORD).path)


def feed(listener: Listener, audio: Pcm) -> list[HearingEvent]:
    return [e for f in frames(audio) for e in listener.process(f)]


def kinds(events: Sequence[HearingEvent]) -> list[type]:
    # the early final's events are the runtime's (speculation), told in the closing silence
    return [type(e) for e in events if not isinstance(e, PartialTranscript | EarlyTranscript | SpeechResumed)]


def finals(events: Sequence[HearingEvent]) -> list[FinalTranscript]:
    return [e for e in events if isinstance(e, FinalTranscript)]


def test_always_mode_streams_partials_then_a_final_on_the_audio_clock(asr: PocketsphinxEngine) -> None:
    speech = piper_speech("Turn on the light.")
    scene = place([(1.0, speech)], 3.5, snr_db=40.0, seed=21)
    (onset, offset), = scene.spans
    listener = Listener(vad(), asr, mode=ListenMode.ALWAYS, origin_s=100.0)
    events = feed(listener, scene.audio)
    assert kinds(events) == [SpeechStarted, SpeechStopped, FinalTranscript]
    started = events[0]
    assert isinstance(started, SpeechStarted)
    assert abs(started.start_s - (100.0 + onset)) <= 0.1
    partials = [e for e in events if isinstance(e, PartialTranscript)]
    assert partials, "streaming mode gives partials while the person speaks"
    stop_index = next(i for i, e in enumerate(events) if isinstance(e, SpeechStopped))
    assert all(events.index(p) < stop_index for p in partials)
    stopped = events[stop_index]
    assert isinstance(stopped, SpeechStopped) and stopped.reason == "silence"
    assert stopped.audio_start == pytest.approx(started.start_s - 0.3, abs=0.001)  # the pre-roll
    (final,) = finals(events)
    assert final.text == "turn on the light"
    assert abs(final.start - (100.0 + onset)) <= 0.1
    assert abs(final.end - (100.0 + offset)) <= 0.2
    for word in final.words:
        assert 100.0 + onset - 0.3 <= word.start < word.end <= 100.0 + offset + 0.3


def test_batch_mode_gives_the_same_final_without_partials(asr: PocketsphinxEngine) -> None:
    scene = place([(1.0, piper_speech("Play some music."))], 3.5, snr_db=40.0, seed=22)
    events = feed(Listener(vad(), asr, streaming=False), scene.audio)
    assert kinds(events) == [SpeechStarted, SpeechStopped, FinalTranscript]
    assert not [e for e in events if isinstance(e, PartialTranscript)]
    assert finals(events)[0].text == "play some music"


def test_wakeword_mode_turn_follows_the_wake_word(asr: PocketsphinxEngine) -> None:
    wake = piper_speech("Okay nabu.")
    command = piper_speech("Turn off the light.")
    at = 1.0 + len(wake) / 16000 + 0.8
    scene = place([(1.0, wake), (at, command)], at + len(command) / 16000 + 1.5, snr_db=40.0, seed=23)
    listener = Listener(vad(), asr, mode=ListenMode.WAKEWORD, wakeword=wakeword())
    events = feed(listener, scene.audio)
    assert kinds(events) == [WakeWordDetected, SpeechStarted, SpeechStopped, FinalTranscript]
    detected, started = events[0], events[1]
    assert isinstance(detected, WakeWordDetected) and detected.name == "okay_nabu"
    assert isinstance(started, SpeechStarted)
    assert abs(started.start_s - at) <= 0.1  # the command, not the wake word's tail
    assert finals(events)[0].text == "turn off the light"


class CountingWakeWord(WakeWordDetector):
    """The real detector; counts the samples its model heard."""

    heard = 0

    def process(self, pcm: Pcm) -> list[WakeWordDetection]:
        self.heard += len(pcm)
        return super().process(pcm)


@pytest.mark.parametrize("quiet_s", [3.0, 0.9])
def test_the_wake_word_rests_with_the_quiet_gate_and_still_hears_the_wake_word(
    asr: PocketsphinxEngine, quiet_s: float,
) -> None:
    """While idle (economy) the quiet gate lets Silero skip a quiet room, and the wake word
    model rests with it; the wake word said after the quiet is found at the same moment
    as by a model that heard everything."""
    wake = piper_speech("Okay nabu.")
    command = piper_speech("Turn off the light.")
    at = quiet_s + len(wake) / 16000 + 0.8
    scene = place([(quiet_s, wake), (at, command)], at + len(command) / 16000 + 1.5, snr_db=50.0, seed=31)
    results = []
    for gated in (False, True):
        detector = CountingWakeWord(resolve_model("okay_nabu", ModelKind.WAKEWORD).path)
        activity = VoiceActivity(SileroVad(resolve_model("silero-vad", ModelKind.VAD).path),
                                 quiet=QuietGate(6.0) if gated else None)
        activity.economy = True
        listener = Listener(activity, asr, mode=ListenMode.WAKEWORD, wakeword=detector)
        events = feed(listener, scene.audio)
        results.append((events, detector.heard, activity.skipped))
    (plain, heard_all, _), (gated_events, heard_gated, skipped) = results
    assert kinds(gated_events) == kinds(plain) == [WakeWordDetected, SpeechStarted, SpeechStopped,
                                                   FinalTranscript]
    assert isinstance(plain[0], WakeWordDetected) and isinstance(gated_events[0], WakeWordDetected)
    assert gated_events[0].t == pytest.approx(plain[0].t, abs=0.03)
    assert finals(gated_events)[0].text == finals(plain)[0].text == "turn off the light"
    assert heard_all == len(scene.audio)
    assert skipped > 0 and heard_gated < heard_all - 0.5 * 16000 * (quiet_s - 0.5)


def test_wakeword_mode_ignores_speech_without_the_wake_word_except_in_follow_up(
    asr: PocketsphinxEngine,
) -> None:
    command = piper_speech("What is the time?")
    scene = place([(0.5, command)], 3.0, snr_db=40.0, seed=24)
    listener = Listener(vad(), asr, mode=ListenMode.WAKEWORD, wakeword=wakeword(), follow_up_s=4.0)
    assert feed(listener, scene.audio) == []
    listener.open_follow_up()  # a reply just finished
    events = feed(listener, scene.audio)
    assert [f.text for f in finals(events)] == ["what is the time"]
    # The window closes with the turn: the next turn needs the wake word again.
    assert feed(listener, scene.audio) == []
    listener.follow_up_s = 1.0  # as a live config change sets it
    listener.open_follow_up()
    assert feed(listener, np.zeros(16000 * 2, dtype=np.int16)) == []
    assert feed(listener, scene.audio) == []  # the window has expired


def test_a_waived_wake_word_admits_every_turn_until_withdrawn(asr: PocketsphinxEngine) -> None:
    """A ringing timer: "stop" needs no wake word for as long as it rings, however long
    the room is quiet before it is said, and for more than one turn (the words here are
    the grammar's)."""
    stop = place([(0.5, piper_speech("Turn off the light."))], 3.0, snr_db=40.0, seed=26)
    listener = Listener(vad(), asr, mode=ListenMode.WAKEWORD, wakeword=wakeword(), follow_up_s=1.0)
    listener.waive_wake_word(True)
    assert feed(listener, np.zeros(16000 * 8, dtype=np.int16)) == []  # 8 s of quiet: still open
    assert [f.text for f in finals(feed(listener, stop.audio))] == ["turn off the light"]
    assert [f.text for f in finals(feed(listener, stop.audio))] == ["turn off the light"]  # again
    listener.waive_wake_word(False)
    assert feed(listener, stop.audio) == []  # the wake word is needed again


def test_wake_word_then_silence_is_discarded(asr: PocketsphinxEngine) -> None:
    scene = place([(1.0, piper_speech("Okay nabu."))], 8.0, snr_db=40.0, seed=25)
    listener = Listener(vad(), asr, mode=ListenMode.WAKEWORD, wakeword=wakeword(), wake_timeout_s=3.0)
    events = feed(listener, scene.audio)
    assert kinds(events) == [WakeWordDetected, TurnDiscarded]
    discarded = events[-1]
    assert isinstance(discarded, TurnDiscarded) and discarded.reason == "no_speech"
    assert discarded.t == pytest.approx(events[0].t + 3.0, abs=0.1)  # type: ignore[union-attr]
    assert not listener.in_turn


def test_button_hold_keeps_the_turn_open_through_pauses(asr: PocketsphinxEngine) -> None:
    command = piper_speech("Turn on the light.")
    listener = Listener(vad(), asr, mode=ListenMode.BUTTON, button_mode=ButtonMode.HOLD,
                        endpoint=EndpointSettings(end_silence_ms=300))
    assert feed(listener, place([(0.3, command)], 2.5).audio) == []  # no button, no turn
    assert listener.button_pressed() == []
    events = feed(listener, np.zeros(16000, dtype=np.int16))  # a pause longer than end_silence
    events += feed(listener, place([(0.2, command)], 2.5).audio)
    assert kinds(events) == [SpeechStarted]
    events += listener.button_released()
    assert kinds(events) == [SpeechStarted, SpeechStopped, FinalTranscript]
    stopped = next(e for e in events if isinstance(e, SpeechStopped))
    assert stopped.reason == "forced"
    assert finals(events)[0].text == "turn on the light"


def test_button_press_mode_ends_the_turn_by_vad(asr: PocketsphinxEngine) -> None:
    listener = Listener(vad(), asr, mode=ListenMode.BUTTON, button_mode=ButtonMode.PRESS)
    listener.button_pressed()
    events = feed(listener, place([(0.5, piper_speech("Play some music."))], 3.5).audio)
    assert kinds(events) == [SpeechStarted, SpeechStopped, FinalTranscript]
    assert finals(events)[0].text == "play some music"
    # A second press mid-turn ends it.
    listener.button_pressed()
    feed(listener, place([(0.2, piper_speech("What is the time?"))], 1.0).audio)
    ended = listener.button_pressed()
    assert kinds(ended) == [SpeechStopped, FinalTranscript]


class SilentAsr(AsrEngine):
    """Recognises nothing: a turn of speech without words."""

    name = "silent"

    def __init__(self) -> None:
        super().__init__(model_name="none", language="en")

    @property
    def grammar(self) -> tuple[str, ...]:
        return ()

    def set_grammar(self, phrases: Sequence[str]) -> None:
        raise NotImplementedError

    def start(self) -> AsrSession:
        return _SilentSession()


class _SilentSession(AsrSession):
    def __init__(self) -> None:
        self.samples = 0

    def accept(self, pcm: Pcm) -> str | None:
        self.samples += len(pcm)
        return None

    def finish(self) -> AsrResult:
        return make_result("", [], 0.5, self.samples)

    def cancel(self) -> None:
        pass


def test_a_turn_without_words_is_discarded() -> None:
    scene = place([(0.5, piper_speech("Turn on the light."))], 3.0, seed=26)
    events = feed(Listener(vad(), SilentAsr()), scene.audio)
    assert kinds(events) == [SpeechStarted, SpeechStopped, TurnDiscarded]
    assert events[-1] == TurnDiscarded("no_words", pytest.approx(events[-1].t))  # type: ignore[union-attr]
    assert isinstance(events[-1], TurnDiscarded) and events[-1].reason == "no_words"


def test_disabling_mid_turn_discards_it(asr: PocketsphinxEngine) -> None:
    speech = piper_speech("Turn on the light.")
    listener = Listener(vad(), asr)
    events = feed(listener, place([(0.3, speech)], 0.3 + len(speech) / 32000).audio)
    assert kinds(events) == [SpeechStarted]
    assert listener.set_enabled(False) == [TurnDiscarded("disabled", listener.now)]
    assert feed(listener, place([(0.3, speech)], 3.0).audio) == []
    listener.set_enabled(True)
    assert kinds(feed(listener, place([(0.3, speech)], 3.0).audio)) == [
        SpeechStarted, SpeechStopped, FinalTranscript
    ]


def test_the_recognizer_hears_the_companion_signal_while_the_vad_judges_the_frame(
    asr: PocketsphinxEngine,
) -> None:
    """The VAD decides on one signal (the canceller's output); the turn and its transcript
    come from the companion (the canceller's linear output)."""
    speech = piper_speech("turn on the light")
    judged = place([(0.5, speech)], 0.5 + len(speech) / 16000 + 1.2, snr_db=40.0, seed=2).audio
    # the companion holds another command at the same moment: the words must be its own
    other = piper_speech("play some music")
    heard = place([(0.5, other)], len(judged) / 16000, snr_db=40.0, seed=3).audio
    listener = Listener(vad(), asr)
    events = [e for a, b in zip(frames(judged), frames(heard), strict=True) for e in listener.process(a, b)]
    stopped = [e for e in events if isinstance(e, SpeechStopped)]
    assert len(stopped) == 1
    start = round((stopped[0].audio_start) * 16000)
    assert np.array_equal(stopped[0].audio, heard[start:start + len(stopped[0].audio)])
    assert [f.text for f in finals(events)] == ["play some music"]
