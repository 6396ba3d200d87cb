"""What a resolved model is: its kind, the engine it is for, and where its files are."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class ModelKind(StrEnum):
    """What a model does."""

    ASR = "asr"
    TTS = "tts"
    VAD = "vad"
    WAKEWORD = "wakeword"
    TURN = "turn"  # end of turn: is the person done talking?


class ModelSource(StrEnum):
    """Where a resolved model came from."""

    PATH = "path"  # the config named a path
    INSTALLED = "installed"  # fetched into the models folder
    BUNDLED = "bundled"  # shipped inside an installed Python package


# The engine a model runs on, per kind, when nothing more specific is known.
DEFAULT_ENGINE: dict[ModelKind, str] = {
    ModelKind.ASR: "vosk",
    ModelKind.TTS: "piper",
    ModelKind.VAD: "silero",
    ModelKind.WAKEWORD: "microwakeword",
    ModelKind.TURN: "smart-turn",
}


@dataclass(frozen=True, slots=True)
class ModelLocation:
    """A model resolved to files on this device.

    ``path`` is what the engine loads: the ``.onnx`` of a piper voice (its
    ``.onnx.json`` beside it), the model folder of vosk and pocketsphinx, the
    ``.tflite`` of a microWakeWord model (its ``.json`` beside it), the ``.onnx``
    of Silero VAD. ``language`` is a BCP 47 tag (``en``, ``en-US``, ``ko``) or
    ``None`` for models that do not depend on the language (VAD).
    """

    name: str
    kind: ModelKind
    path: Path
    source: ModelSource
    engine: str
    language: str | None = None

    @property
    def config_path(self) -> Path | None:
        """The companion JSON of a piper voice or a microWakeWord model, if it has one."""
        if self.engine == "piper":
            return self.path.with_name(self.path.name + ".json")
        if self.engine == "microwakeword":
            return self.path.with_suffix(".json")
        return None

    def as_dict(self) -> dict[str, str | None]:
        return {
            "name": self.name,
            "kind": str(self.kind),
            "engine": self.engine,
            "language": self.language,
            "source": str(self.source),
            "path": str(self.path),
        }


def language_matches(model_language: str | None, wanted: str) -> bool:
    """Whether a model serves ``wanted`` (``en`` matches ``en-US``; ``None`` matches all)."""
    if model_language is None:
        return True
    have = model_language.replace("_", "-").lower()
    want = wanted.replace("_", "-").lower()
    if have == want:
        return True
    # A bare primary tag on either side matches any region of that language.
    return have.split("-")[0] == want.split("-")[0] and ("-" not in have or "-" not in want)
