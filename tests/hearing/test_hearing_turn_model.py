"""The turn model: our Whisper features match pipecat's reference, the endpointer acts on
the model's answer (pure, no clock), and the real smart-turn v3 tells a finished sentence
from one broken off with a filler."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from support.hearing_audio import piper_speech

from edgevoice.audio.hearing.endpoint import Endpointer, EndpointSettings, EndpointStep, EndReason, TurnEnd
from edgevoice.audio.hearing.turn_model import (
    WINDOW_SAMPLES,
    TurnModel,
    TurnWorker,
    log_mel_features,
    model_window,
)
from edgevoice.models import ModelKind, ModelNotFoundError, resolve_model
from edgevoice.models.bundled import package_dir

FRAME = 160  # 10 ms


def reference_features() -> ModuleType:
    """pipecat's feature module loaded as a lone file: it imports only numpy, so pipecat's
    package (and its dependencies) is never imported."""
    base = package_dir("pipecat")
    if base is None:
        pytest.skip("pipecat-ai is not installed (./dev setup installs it --no-deps)")
    path = base / "audio" / "turn" / "smart_turn" / "_whisper_features.py"
    spec = importlib.util.spec_from_file_location("smart_turn_reference_features", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "pipecat" not in sys.modules
    return module


@pytest.mark.parametrize("signal", ["noise", "tone", "speech-like burst at the end", "near silence"])
def test_features_match_the_reference_implementation(signal: str) -> None:
    rng = np.random.default_rng(7)
    t = np.arange(WINDOW_SAMPLES) / 16000
    audio = {
        "noise": rng.normal(0, 0.1, WINDOW_SAMPLES),
        "tone": 0.3 * np.sin(2 * np.pi * 440 * t) + 0.1 * np.sin(2 * np.pi * 3100 * t),
        "speech-like burst at the end": np.where(t > 6.5, rng.normal(0, 0.3, WINDOW_SAMPLES), 0.0),
        "near silence": rng.normal(0, 1e-4, WINDOW_SAMPLES),
    }[signal].astype(np.float32)
    ours = log_mel_features(audio)
    theirs = reference_features().compute_whisper_log_mel_features(audio, do_normalize=True)
    assert ours.shape == (80, 800) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_the_window_is_the_last_8_s_padded_at_the_start() -> None:
    short = np.full(16000, 1000, np.int16)
    window = model_window(short)
    assert len(window) == WINDOW_SAMPLES
    assert not window[:-16000].any() and window[-1] == pytest.approx(1000 / 32768)
    long = np.arange(WINDOW_SAMPLES + 500, dtype=np.int64).astype(np.int16)
    assert model_window(long)[0] == pytest.approx(long[500] / 32768)


def speech_then_silence(endpointer: Endpointer, speech_ms: int, silence_ms: int) -> list[EndpointStep]:
    steps = []
    for i in range((speech_ms + silence_ms) // 10):
        steps.append(endpointer.push(np.zeros(FRAME, np.int16), i < speech_ms // 10))
    return steps


def test_a_pause_asks_once_and_a_complete_verdict_ends_the_turn_at_the_end_of_speech() -> None:
    ep = Endpointer(EndpointSettings(end_silence_ms=1500, turn_check_ms=200, turn_threshold=0.5))
    steps = speech_then_silence(ep, 1000, 300)
    checks = [s.check for s in steps if s.check is not None]
    assert len(checks) == 1 and checks[0].at_s == pytest.approx(1.2)
    assert not ep.verdict(checks[0].ticket, 0.49).events  # below threshold: keep waiting
    end = ep.verdict(checks[0].ticket, 0.9).events
    assert len(end) == 1 and isinstance(end[0], TurnEnd)
    assert end[0].reason == EndReason.COMPLETE and end[0].end_s == pytest.approx(1.0)


def test_an_incomplete_verdict_waits_for_end_silence_and_a_stale_one_is_ignored() -> None:
    ep = Endpointer(EndpointSettings(end_silence_ms=1000, turn_check_ms=200))
    first = [s.check for s in speech_then_silence(ep, 500, 250) if s.check][0]
    assert not ep.verdict(first.ticket, 0.1).events
    # the person goes on: the first pause's (late) answer must not end the new speech
    later = speech_then_silence(ep, 300, 900)
    assert not ep.verdict(first.ticket, 1.0).events
    second = [s.check for s in later if s.check][0]
    assert second.ticket != first.ticket
    ends = [e for s in later for e in s.events if isinstance(e, TurnEnd)]
    assert not ends  # 900 ms < end_silence: still waiting
    more = speech_then_silence(ep, 0, 200)
    ends = [e for s in more for e in s.events if isinstance(e, TurnEnd)]
    assert len(ends) == 1 and ends[0].reason == EndReason.SILENCE


def test_without_a_turn_model_nothing_is_asked() -> None:
    ep = Endpointer(EndpointSettings(end_silence_ms=600))
    assert all(s.check is None for s in speech_then_silence(ep, 500, 700))


def test_the_worker_answers_off_the_callers_thread_and_keeps_only_the_latest_question() -> None:
    import threading

    seen: list[str] = []

    def slow(pcm: np.ndarray) -> float:
        seen.append(threading.current_thread().name)
        time.sleep(0.2)
        return float(pcm[0]) / 10

    worker = TurnWorker(slow)
    try:
        start = time.monotonic()
        worker.ask(1, np.array([1], np.int16))
        worker.ask(2, np.array([2], np.int16))  # replaces 1 if it has not started
        worker.ask(3, np.array([3], np.int16))
        assert time.monotonic() - start < 0.05  # ask never waits for the model
        assert worker.wait_idle(3.0)
        verdicts = worker.verdicts()
        assert verdicts[-1].ticket == 3 and verdicts[-1].probability == pytest.approx(0.3)
        assert 2 not in {v.ticket for v in verdicts}
        assert set(seen) == {"edgevoice-turn"}
    finally:
        worker.close()


@pytest.fixture(scope="module")
def smart_turn() -> TurnModel:
    try:
        loc = resolve_model("smart-turn-v3", ModelKind.TURN)
    except ModelNotFoundError as err:
        pytest.skip(f"smart-turn v3 is not on this machine: {err}")
    assert Path(loc.path).is_file()
    return TurnModel(loc.path)


def turn(pcm: np.ndarray) -> np.ndarray:
    """A turn as the listener hands it over: pre-roll, the speech, 200 ms of pause."""
    return np.concatenate((np.zeros(4800, np.int16), pcm, np.zeros(3200, np.int16)))


@pytest.mark.parametrize(("complete", "broken_off"), [
    ("set a timer for ten minutes.", "set a timer for, uh,"),
    ("can you remind me to call my mother tomorrow morning.", "can you remind me to call my, um,"),
])
def test_real_speech_a_finished_sentence_scores_high_and_a_broken_off_one_low(
    smart_turn: TurnModel, complete: str, broken_off: str
) -> None:
    done = smart_turn.completion(turn(piper_speech(complete)))
    mid = smart_turn.completion(turn(piper_speech(broken_off)))
    assert mid < 0.5 and mid < done - 0.3, (done, mid)
    start = time.process_time()
    for _ in range(5):
        smart_turn.completion(turn(piper_speech(complete)))
    cpu_ms = (time.process_time() - start) / 5 * 1000
    print(f"smart-turn v3 CPU per decision: {cpu_ms:.0f} ms")
    assert cpu_ms < 1000
