"""Logging set-up for the CLI and the daemon: module loggers, secrets scrubbed.

Scrubbing covers the whole record a handler writes: the message, the traceback
(``exc_info``) and ``stack_info``. A secret once configured stays masked after it is
rotated out (a reload keeps the old password's filter terms): an old password in a
late traceback is still a password. Secrets of any length are masked; one shorter
than :data:`SHORT_SECRET` characters only where it stands alone (not inside a longer
word), so a three-letter PIN does not shred every line that happens to contain it.
"""

from __future__ import annotations

import logging
import re
import sys
import traceback
from collections import deque
from collections.abc import Iterable

REDACTED = "***"
SHORT_SECRET = 6


class SecretFilter(logging.Filter):
    """Replace any configured secret that reaches a log record with ``***``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets: frozenset[str] = frozenset(s for s in secrets if s)
        long_ones = sorted((s for s in self.secrets if len(s) >= SHORT_SECRET), key=len, reverse=True)
        short_ones = sorted((s for s in self.secrets if len(s) < SHORT_SECRET), key=len, reverse=True)
        parts = [re.escape(s) for s in long_ones]
        parts += [rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])" for s in short_ones]
        self._pattern = re.compile("|".join(parts)) if parts else None

    def scrub(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self._pattern is not None else text

    def filter(self, record: logging.LogRecord) -> bool:
        if self._pattern is None:
            return True
        message = record.getMessage()
        scrubbed = self.scrub(message)
        if scrubbed != message:
            record.msg = scrubbed
            record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            # Formatter.format() uses a cached exc_text when there is one: fill it,
            # scrubbed, so no handler formats the raw traceback again.
            text = record.exc_text or "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = self.scrub(text)
        elif record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = self.scrub(record.stack_info)
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
    recent = RecentLogHandler()
    recent._edgevoice = True  # type: ignore[attr-defined]
    root.addHandler(recent)
    root.setLevel(logging.DEBUG if debug else logging.INFO)


def scrub_secrets(secrets: Iterable[str]) -> None:
    """Install a :class:`SecretFilter` on every handler of the root logger.

    The secrets of the filter it replaces are kept: a secret rotated out by a reload
    is still masked (it may sit in a late traceback, or be somebody's old password)."""
    known: set[str] = set(secrets)
    handlers = logging.getLogger().handlers
    for handler in handlers:
        for old in handler.filters:
            if isinstance(old, SecretFilter):
                known |= old.secrets
    secret_filter = SecretFilter(known)
    for handler in handlers:
        for old in [f for f in handler.filters if isinstance(f, SecretFilter)]:
            handler.removeFilter(old)
        handler.addFilter(secret_filter)


class RecentLogHandler(logging.Handler):
    """The last ``capacity`` formatted log lines, kept in memory for the ``logs`` fleet
    command. Installed on the root logger beside the stderr handler, so
    :func:`scrub_secrets` puts its filter on it too: what it keeps is already scrubbed."""

    def __init__(self, capacity: int = 1000) -> None:
        super().__init__()
        self._lines: deque[str] = deque(maxlen=capacity)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:  # logging must never raise into the caller
            self.handleError(record)
            return
        self._lines.extend(text.splitlines() or [""])

    def tail(self, lines: int) -> list[str]:
        """The last ``lines`` lines, oldest first."""
        kept = list(self._lines)
        return kept[-lines:] if lines > 0 else []


def recent_log() -> RecentLogHandler | None:
    """The root logger's :class:`RecentLogHandler`, when logging was set up with one."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, RecentLogHandler):
            return handler
    return None
