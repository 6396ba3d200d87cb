"""The console's errors: each with a stable ``code``."""

from __future__ import annotations

from edgevoice.errors import EdgeVoiceError


class ConsoleError(EdgeVoiceError):
    """The console cannot start or serve (bad listen address, unreadable TLS files, token file)."""

    code = "console_failed"
