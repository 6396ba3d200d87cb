"""Moonshine tiny-en (the bundled accurate English) on piper and espeak-ng speech: exact
words, partials off the caller's thread with a bounded cost, the early final, grammar."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest
from support.hearing_audio import espeak_speech, frames, piper_speech, place

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing import asr_moonshine
from edgevoice.audio.hearing.asr import AsrError
from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine, closest_phrase, model_folder
from edgevoice.audio.hearing.endpoint import EndpointSettings
from edgevoice.audio.hearing.events import FinalTranscript, SpeechStopped
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.moonshine_audio import Decoded, normalise, speech_span
from edgevoice.audio.hearing.vad import VoiceActivity
from edgevoice.audio.hearing.vad_energy import EnergyVad
from edgevoice.errors import EdgeVoiceError

PAD = np.zeros(4800, dtype=np.int16)
# NO_HOLD: the listeners here are fed faster than real time, so Moonshine's early final is
# read late on the audio clock, and until it is read a text hold keeps the pause open for
# longer than these scenes' tails; the hold has its own tests (test_hearing_text_hold*.py).
CLEAR = ("what time is it", "please tell me a story", "turn on the kitchen light",
         "set a timer for ten minutes", "sorry what time is it now")


def padded(pcm: Pcm) -> Pcm:
    return np.concatenate([PAD, pcm, PAD])


class CountingEngine:
    """Counts the decodes a session queues on the real engine (the partials' cost)."""

    def __init__(self, engine: MoonshineEngine) -> None:
        self.engine = engine
        self.queued: list[int] = []
        self._decode = engine.decode

    def __enter__(self) -> CountingEngine:
        def decode(pcm: Pcm) -> Future[Decoded]:
            self.queued.append(len(pcm))
            return self._decode(pcm)

        self.engine.decode = decode  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        del self.engine.decode


@pytest.mark.parametrize("text", CLEAR)
def test_clear_piper_phrases_are_heard_word_for_word(moonshine_engine: MoonshineEngine, text: str) -> None:
    result = moonshine_engine.transcribe(padded(piper_speech(text)))
    assert result.text == text
    assert [w.word for w in result.words] == text.split()
    times = [t for w in result.words for t in (w.start, w.end)]
    assert times == sorted(times) and times[-1] <= result.audio_s
    assert result.words[0].start >= 0.25  # the 0.3 s of silence before the speech


@pytest.mark.parametrize(("text", "voice"), [("what time is it", "en-us"),
                                             ("turn on the kitchen light", "en-gb"),
                                             ("please tell me a story", "en-us")])
def test_clear_espeak_phrases_are_heard_word_for_word(moonshine_engine: MoonshineEngine, text: str,
                                                      voice: str) -> None:
    assert moonshine_engine.transcribe(padded(espeak_speech(text, voice))).text == text


def test_silence_gives_no_words(moonshine_engine: MoonshineEngine) -> None:
    result = moonshine_engine.transcribe(np.zeros(SAMPLE_RATE, dtype=np.int16))
    assert result.empty and not result.words


def test_partials_come_from_the_worker_and_cost_at_most_one_decode_per_interval(
    moonshine_engine: MoonshineEngine,
) -> None:
    """Fed at about real time: partials arrive while the person speaks, the caller never
    waits for one, and no more than one decode per 0.5 s of new audio is queued."""
    text = "please tell me a story about the sea"
    audio = padded(piper_speech(text))
    partials: list[str] = []
    slowest = 0.0
    with CountingEngine(moonshine_engine) as counting:
        session = moonshine_engine.start()
        for chunk in [audio[i:i + 1600] for i in range(0, len(audio), 1600)]:
            before = time.monotonic()
            partial = session.accept(chunk)
            slowest = max(slowest, time.monotonic() - before)
            if partial:
                partials.append(partial)
            time.sleep(0.1)
        result = session.finish()
    assert result.text == text
    assert partials, "no partial while the person spoke"
    # a partial of the first words reads them right (later ones may end in a word cut
    # short, or one made up out of the silence after it: the final pass settles those)
    assert any(p.split()[:3] == ["please", "tell", "me"] for p in partials), partials
    audio_s = len(audio) / SAMPLE_RATE
    # the partials' decodes plus the final one
    assert 2 <= len(counting.queued) <= int(audio_s / moonshine_engine.partial_interval_s) + 1
    assert slowest < 0.05, f"accept() took {slowest * 1000:.0f} ms: it waited for a decode"


def test_decoding_runs_off_the_caller_thread_and_releases_the_gil(
    moonshine_engine: MoonshineEngine,
) -> None:
    """While the worker decodes 6 s of speech, a Python thread keeps running."""
    audio = padded(np.concatenate([piper_speech("please tell me a long story about the sea")] * 3))
    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    spinner = threading.Thread(target=spin)
    spinner.start()
    started = time.monotonic()
    moonshine_engine.decode(audio).result()
    elapsed = time.monotonic() - started
    stop.set()
    spinner.join()
    # a thread that sleeps 1 ms per tick gets most of them if the GIL is free
    assert ticks >= 0.3 * elapsed / 0.0011, f"{ticks} ticks in {elapsed:.2f} s"


def test_the_early_final_is_queued_in_the_closing_silence(moonshine_engine: MoonshineEngine) -> None:
    speech = piper_speech("what is the weather like today")
    scene = place([(0.5, speech)], 0.5 + len(speech) / SAMPLE_RATE + 1.2, snr_db=40.0, seed=2)
    listener = Listener(VoiceActivity(EnergyVad()), moonshine_engine,
                        endpoint=EndpointSettings(end_silence_ms=600, pre_roll_ms=300,
                                                  hold_silence_ms=0),  # see NO_HOLD
                        early_final_ms=300)
    with CountingEngine(moonshine_engine) as counting:
        events = []
        queued_before_end = 0
        for f in frames(scene.audio):
            out = listener.process(f)
            if any(isinstance(e, SpeechStopped) for e in out):
                queued_before_end = len(counting.queued)
            events.extend(out)
    (final,) = [e for e in events if isinstance(e, FinalTranscript)]
    assert final.text == "what is the weather like today"
    # the final decode was queued before the turn ended, and none after it
    assert queued_before_end == len(counting.queued) >= 1
    assert counting.queued[-1] >= len(speech)
    (stop,) = [e for e in events if isinstance(e, SpeechStopped)]
    assert final.words[0].start >= stop.audio_start


def test_grammar_mode_snaps_to_the_nearest_phrase_or_flags_the_text(
    moonshine_engine: MoonshineEngine,
) -> None:
    phrases = ("turn on the light", "turn off the light", "play some music")
    moonshine_engine.set_grammar(phrases)
    try:
        on = moonshine_engine.transcribe(padded(piper_speech("Turn off the light.")))
        other = moonshine_engine.transcribe(padded(piper_speech("What is the capital of France?")))
    finally:
        moonshine_engine.set_grammar(())
    assert on.text == "turn off the light" and not on.low_confidence
    assert on.text.split() == [w.word for w in on.words]
    assert other.low_confidence and other.text not in phrases


def test_one_session_at_a_time(moonshine_engine: MoonshineEngine) -> None:
    session = moonshine_engine.start()
    try:
        with pytest.raises(AsrError):
            moonshine_engine.start()
        with pytest.raises(AsrError):
            moonshine_engine.set_grammar(("stop",))
    finally:
        session.cancel()
    moonshine_engine.start().cancel()


def test_normalise_and_closest_phrase() -> None:
    assert normalise("Hello, there! What’s up?") == ["hello", "there", "what's", "up"]
    assert normalise("- ... ") == []
    assert closest_phrase(["turn", "of", "the", "light"], ("turn on the light", "turn off the light")) \
        in {"turn on the light", "turn off the light"}
    assert closest_phrase(["turn", "off", "the", "light"], ("turn on the light", "turn off the light")) \
        == "turn off the light"
    assert closest_phrase(["what", "is", "the", "capital"], ("stop", "play some music")) is None


def test_speech_span_cuts_leading_silence_but_keeps_the_onset() -> None:
    speech = piper_speech("hello there")
    audio = np.concatenate([np.zeros(8000, dtype=np.int16), speech, np.zeros(8000, dtype=np.int16)])
    begin, end = speech_span(audio)
    assert 8000 - 0.05 * SAMPLE_RATE <= begin <= 8000
    assert 8000 + len(speech) <= end <= 8000 + len(speech) + 0.25 * SAMPLE_RATE


def test_a_missing_engine_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "moonshine_voice", None)
    with pytest.raises(EdgeVoiceError, match=r"pip install 'edgevoice\[moonshine\]'"):
        asr_moonshine._moonshine()


def test_a_folder_without_the_model_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "encoder_model.ort").write_bytes(b"")
    with pytest.raises(EdgeVoiceError, match="decoder_model_merged.ort, tokenizer.bin missing"):
        model_folder(tmp_path)


def test_no_decode_while_recognition_is_held(moonshine_engine: MoonshineEngine) -> None:
    """While the device speaks and a barge-in is being decided the listener holds the
    turn's audio: Moonshine gets none of it, so no partial decode competes for the CPU;
    once the hold lifts, the held audio is heard first."""
    speech = piper_speech("please tell me a story")
    scene = place([(0.5, speech)], 0.5 + len(speech) / SAMPLE_RATE + 1.2, snr_db=40.0, seed=4)
    listener = Listener(VoiceActivity(EnergyVad()), moonshine_engine,
                        endpoint=EndpointSettings(end_silence_ms=600, pre_roll_ms=300,
                                                  hold_silence_ms=0))  # see NO_HOLD
    pieces = frames(scene.audio)
    held_until = round((0.5 + len(speech) / SAMPLE_RATE * 0.7) * SAMPLE_RATE / 160)
    events = []
    with CountingEngine(moonshine_engine) as counting:
        listener.hold_recognition = True
        for f in pieces[:held_until]:
            events.extend(listener.process(f))
        assert listener.in_turn and counting.queued == []
        listener.hold_recognition = False
        for f in pieces[held_until:]:
            events.extend(listener.process(f))
    (final,) = [e for e in events if isinstance(e, FinalTranscript)]
    assert final.text == "please tell me a story"
    assert counting.queued
