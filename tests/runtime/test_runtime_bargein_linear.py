"""The barge-in VAD on the echo canceller's linear output (``[barge_in] vad_signal =
linear``, opt-in): a second stream of the listener's model, used only while a reply is in
flight."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest
from support.hearing_audio import frames, piper_speech, place

from edgevoice.audio.frames import Pcm
from edgevoice.audio.hearing.bargein import BargeInDetector, BargeInSettings
from edgevoice.audio.hearing.vad import VadEngine, VadWindow
from edgevoice.audio.hearing.vad_energy import EnergyVad
from edgevoice.audio.hearing.vad_silero import SileroVad
from edgevoice.device.assembly.echo import build_barge_in
from edgevoice.device.config.schema import BargeInConfig
from edgevoice.device.runtime.bargein import BargeInMonitor
from edgevoice.models import ModelKind, resolve_model

WINDOW = 512


class ScriptedVad(VadEngine):
    """Says ``probability`` for every window; counts what it was asked."""

    name = "scripted"
    window_samples = WINDOW

    def __init__(self, probability: float) -> None:
        self.answer = probability
        self.scored = 0
        self.resets = 0

    def probability(self, window: Pcm) -> float:
        self.scored += 1
        return self.answer

    def reset(self) -> None:
        self.resets += 1


def windows(count: int, start: int = 0, scale: float = 1000.0) -> list[VadWindow]:
    """Windows whose own (suppressed-output) verdict is 'no speech' at a speech-like level
    (``scale`` 1000: ~ -30 dBFS), the linear output riding along as ``heard``."""
    rng = np.random.default_rng(start)
    out = []
    for i in range(count):
        pcm = (rng.standard_normal(WINDOW) * scale).astype(np.int16)
        out.append(VadWindow((start + i) * WINDOW, pcm, 0.0, False, pcm.copy()))
    return out


def test_while_a_reply_is_in_flight_the_linear_output_decides() -> None:
    linear = ScriptedVad(0.9)
    monitor = BargeInMonitor(BargeInDetector(BargeInSettings(min_speech_ms=150)), linear_vad=linear)
    # the quiet room before the reply (the person must stand out of it, 30 dB here)
    assert monitor.update(windows(20, scale=30.0), None, False, in_reply=False) is None
    assert linear.scored == 0  # nothing plays: the second stream costs nothing
    taken = [monitor.update([w], None, True, in_reply=True) for w in windows(8, start=20)]
    assert linear.resets == 1  # a new reply starts the stream afresh
    # 150 ms of speech in 32 ms windows: the fifth window (160 ms) takes the reply
    assert [t is not None for t in taken] == [False] * 4 + [True] + [False] * 3


@pytest.mark.parametrize(("cut_db", "taken"), [(0.0, True), (5.0, True), (10.0, False)])
def test_the_monitor_tells_the_detector_what_the_suppressor_took(cut_db: float, taken: bool) -> None:
    """``heard`` (the linear output) against the window (the suppressed output): a window
    the suppressor cut by more than max_suppression_db (6 dB) is echo."""
    monitor = BargeInMonitor(BargeInDetector(BargeInSettings(min_speech_ms=150)), linear_vad=ScriptedVad(0.9))
    cut = [VadWindow(w.start_sample, (w.pcm * 10 ** (-cut_db / 20)).astype(np.int16), 0.9, True, w.heard)
           for w in windows(8)]
    results = [monitor.update([w], None, True, in_reply=True) for w in cut]
    assert any(r is not None for r in results) is taken


def test_without_the_linear_stream_the_windows_own_verdict_decides() -> None:
    monitor = BargeInMonitor(BargeInDetector(BargeInSettings(min_speech_ms=150)))
    assert all(monitor.update([w], None, True, in_reply=True) is None for w in windows(30))


def test_a_second_silero_stream_scores_like_a_fresh_model_and_keeps_its_own_state() -> None:
    path = resolve_model("silero-vad", ModelKind.VAD).path
    first = SileroVad(path)
    second = first.another_stream()
    fresh = SileroVad(path)
    speech = place([(0.3, piper_speech("Excuse me, what time is it?"))], 2.5, snr_db=30.0, seed=4).audio
    noise = (np.random.default_rng(5).standard_normal(40000) * 300).astype(np.int16)
    got, want = [], []
    for a, b in zip(frames(speech, WINDOW), frames(noise, WINDOW), strict=False):
        if len(a) < WINDOW or len(b) < WINDOW:
            break
        first.probability(b)  # the first stream hears something else in between
        got.append(second.probability(a))
        want.append(fresh.probability(a))
    assert got == want
    assert max(got) > 0.9 and min(got) < 0.1
    assert second._session is first._session  # the point: one model in memory


def test_a_second_energy_stream_is_independent() -> None:
    first = EnergyVad(margin_db=10.0)
    second = first.another_stream()
    loud = (np.random.default_rng(1).standard_normal(160) * 3000).astype(np.int16)
    for _ in range(50):
        first.probability(loud)  # learns a loud floor
    assert second.probability(loud) == EnergyVad(margin_db=10.0).probability(loud)


@pytest.mark.parametrize(("signal", "wanted"), [("linear", True), ("output", False)])
def test_the_config_chooses_the_signal(signal: str, wanted: bool) -> None:
    assert BargeInConfig().vad_signal == "output"  # opt-in: unsafe with a clipping speaker
    engine = SileroVad(resolve_model("silero-vad", ModelKind.VAD).path)
    config = dataclasses.replace(BargeInConfig(), vad_signal=signal)
    monitor = build_barge_in(config, None, listener_vad=engine)
    assert (monitor.linear_vad is not None) is wanted


def test_an_engine_without_a_second_stream_falls_back_to_the_output(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    config = dataclasses.replace(BargeInConfig(), vad_signal="linear")
    monitor = build_barge_in(config, None, listener_vad=ScriptedVad(0.5))
    assert monitor.linear_vad is None
    assert "cannot score a second stream" in caplog.text
