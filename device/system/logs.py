"""Logging set-up for the CLI and the daemon: module loggers, secrets scrubbed."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

REDACTED = "***"


class SecretFilter(logging.Filter):
    """Replace any configured secret that reaches a log record with ``***``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        message = record.getMessage()
        scrubbed = message
        for secret in self._secrets:
            scrubbed = scrubbed.replace(secret, REDACTED)
        if scrubbed != message:
            record.msg = scrubbed
            record.args = None
        return True


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the moment of the record, not the stream
    that was current when logging was set up (which may have been closed since: a
    test's captured stderr, a replaced stream)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


def setup_logging(debug: bool = False) -> None:
    """Log to stderr (journald picks it up under systemd); DEBUG with ``--debug``."""
    root = logging.getLogger()
    if any(getattr(h, "_edgevoice", False) for h in root.handlers):
        root.setLevel(logging.DEBUG if debug else logging.INFO)
        return
    handler = StderrHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._edgevoice = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)


def scrub_secrets(secrets: Iterable[str]) -> None:
    """Install a :class:`SecretFilter` on every handler of the root logger."""
    secret_filter = SecretFilter(secrets)
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, SecretFilter)]:
            handler.removeFilter(old)
        handler.addFilter(secret_filter)
