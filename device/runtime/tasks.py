"""Small asyncio helpers the runtime shares."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

_LOGGER = logging.getLogger(__name__)


async def cancel_task(task: asyncio.Task[Any] | None, timeout_s: float = 5.0) -> None:
    """Cancel ``task`` and wait for it to end.

    The task's own ``CancelledError`` is expected and absorbed; if the *caller* is
    cancelled while waiting, that cancellation propagates (never swallowed).
    """
    if task is None or task.done():
        return
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        _LOGGER.warning("task %s did not stop within %.1f s of being cancelled", task.get_name(), timeout_s)
        return
    with contextlib.suppress(asyncio.CancelledError):
        exc = task.exception()
        if exc is not None:
            _LOGGER.debug("task %s ended with %r while being cancelled", task.get_name(), exc)


class AudioClock:
    """Maps the event loop's monotonic time onto the duplex loop's audio clock.

    Every frame that reaches the conversation says where the audio clock stood when it
    arrived; a moment in between is that plus the real time elapsed since. With the
    room at speed 0 the audio clock runs ahead of real time, and stage durations taken
    from it mean what the audio did, not what the wall clock did.
    """

    def __init__(self) -> None:
        self._audio_s = 0.0
        self._mono = time.monotonic()

    def on_frame(self, end_s: float) -> None:
        self._audio_s = end_s
        self._mono = time.monotonic()

    def now(self) -> float:
        return self.at(time.monotonic())

    def at(self, mono: float) -> float:
        """Audio time of a ``time.monotonic()`` stamp (never before the last frame)."""
        return self._audio_s + max(0.0, mono - self._mono)
