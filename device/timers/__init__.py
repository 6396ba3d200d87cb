"""Timers without any server: several named timers, wall-clock based, persisted
atomically so they survive a restart; they ring until stopped.

- :mod:`.model` — the pure timer book (no clock inside: wall-clock times are passed in).
- :mod:`.phrases` — "set a timer for five minutes", "how long is left", "cancel the timer".
- :mod:`.store` — the book on disk (temporary file, fsync, rename, fsync of the folder).
- :mod:`.service` — the runtime: scheduling, ringing with an earcon, stopping.
"""

from __future__ import annotations

from edgevoice.device.timers.model import Timer, TimerBook, TimerError

__all__ = ["Timer", "TimerBook", "TimerError"]
