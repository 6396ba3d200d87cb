"""Errors of the knowledge service; each has a stable ``code`` and says what to do."""

from __future__ import annotations

from edgevoice.errors import EdgeVoiceError


class KnowledgeError(EdgeVoiceError):
    """Base class of knowledge errors."""

    code = "knowledge_error"


class KnowledgeSourceError(KnowledgeError, ValueError):
    """A knowledge file that cannot be read (bad TOML, wrong shape, not UTF-8)."""

    code = "knowledge_source_invalid"


class KnowledgePathError(KnowledgeError, FileNotFoundError):
    """A configured or added knowledge path that does not exist."""

    code = "knowledge_path_not_found"


class KnowledgeIndexError(KnowledgeError, OSError):
    """The index file cannot be written (disk full, read-only folder)."""

    code = "knowledge_index_unwritable"


class KnowledgeDisabledError(KnowledgeError):
    """The command needs ``[knowledge] enabled = true``."""

    code = "knowledge_disabled"


NOTHING_CHANGED = "nothing was changed"


class BundleError(KnowledgeError, ValueError):
    """A knowledge bundle that was refused; nothing on the device changed."""

    code = "knowledge_bundle_invalid"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        if NOTHING_CHANGED not in message:
            message = f"{message}; {NOTHING_CHANGED}"
        super().__init__(message, code=code)


class BundleChecksumError(BundleError):
    code = "knowledge_bundle_checksum_mismatch"


class BundleDownloadError(KnowledgeError, ConnectionError):
    code = "knowledge_bundle_download_failed"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(f"{message}; {NOTHING_CHANGED}", code=code)
