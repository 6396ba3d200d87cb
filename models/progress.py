"""Fetch progress: one small record per update, and a progress bar for terminals."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TextIO


class FetchPhase(StrEnum):
    DOWNLOAD = "download"
    UNPACK = "unpack"
    VERIFY = "verify"


@dataclass(frozen=True, slots=True)
class FetchProgress:
    """``done`` of ``total`` (bytes when downloading, files when unpacking)."""

    model: str
    filename: str
    phase: FetchPhase
    done: int
    total: int | None

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, self.done / self.total)


ProgressCallback = Callable[[FetchProgress], None]


def _mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"


class TerminalProgress:
    """A progress bar on a terminal (redrawn in place), plain lines when not a terminal.

    Not a terminal (a log, a pipe): a line at most every ``line_interval_s`` and at
    the end of each phase, so journald is not flooded.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        width: int = 30,
        line_interval_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._width = width
        self._interval = line_interval_s
        self._clock = clock
        self._last_line = float("-inf")
        self._open_bar = False
        self._current: tuple[str, FetchPhase] | None = None

    def __call__(self, update: FetchProgress) -> None:
        key = (update.filename, update.phase)
        if key != self._current:
            self._end_bar()
            self._current = key
            self._last_line = float("-inf")
        finished = update.total is not None and update.done >= update.total
        text = self._describe(update)
        if self._tty:
            self._stream.write("\r" + text + "\x1b[K")
            self._open_bar = True
            if finished:
                self._end_bar()
        else:
            now = self._clock()
            if finished or now - self._last_line >= self._interval:
                self._stream.write(text + "\n")
                self._last_line = now
        self._stream.flush()

    def close(self) -> None:
        self._end_bar()
        self._stream.flush()

    def _end_bar(self) -> None:
        if self._open_bar:
            self._stream.write("\n")
            self._open_bar = False

    def _describe(self, update: FetchProgress) -> str:
        label = f"{update.phase} {update.filename}"
        fraction = update.fraction
        if update.phase == FetchPhase.DOWNLOAD:
            amount = _mb(update.done) + (f" / {_mb(update.total)}" if update.total else "")
        else:
            amount = f"{update.done}" + (f"/{update.total}" if update.total else "")
        if fraction is None:
            return f"{label}  {amount}"
        filled = int(round(fraction * self._width))
        bar = "#" * filled + "-" * (self._width - filled)
        return f"{label} [{bar}] {fraction * 100:5.1f}%  {amount}"
