"""Errors of the model registry; each has a stable ``code`` and says what to do."""

from __future__ import annotations

from edgevoice.errors import EdgeVoiceError


class ModelError(EdgeVoiceError):
    """Base class of model registry errors."""

    code = "model_error"


class ModelNotFoundError(ModelError, LookupError):
    """A model name or path that cannot be resolved to files on this device."""

    code = "model_not_found"


class ModelKindError(ModelError, ValueError):
    """A model was found but it is of another kind than the caller needs."""

    code = "model_wrong_kind"


class ModelDownloadError(ModelError, ConnectionError):
    """The download failed (network, HTTP status); running the fetch again resumes it."""

    code = "model_download_failed"


class ModelChecksumError(ModelError, ValueError):
    """The downloaded archive or an installed file does not match its sha256."""

    code = "model_checksum_mismatch"


class ModelArchiveError(ModelError, ValueError):
    """The archive could not be unpacked or lacks the files the manifest lists."""

    code = "model_archive_invalid"


class ModelStorageError(ModelError, OSError):
    """The models folder cannot be written: disk full, permissions, read-only file system.

    ``reason`` is the ``errno`` of the underlying failure (``errno.ENOSPC`` ...), or 0.
    """

    code = "model_storage_error"

    def __init__(self, message: str, *, reason: int = 0) -> None:
        super().__init__(message)
        self.reason = reason


class ManifestError(ModelError, ValueError):
    """The model manifest (shipped or local) is malformed."""

    code = "model_manifest_invalid"
