"""Small asyncio helpers the runtime shares."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
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
    """The audio clock as the event loop sees it.

    ``source`` is the duplex loop's own position (seconds of capture read so far), so
    "now" is where the audio is, not where the front end's processing has got to. A
    past ``time.monotonic()`` stamp is mapped back at real-time speed, which is what
    the audio clock runs at on a device and in the room at speed 1.
    """

    def __init__(self, source: Callable[[], float]) -> None:
        self._source = source

    def now(self) -> float:
        return self._source()

    def at(self, mono: float) -> float:
        """Audio time of a ``time.monotonic()`` stamp taken earlier."""
        return self._source() - max(0.0, time.monotonic() - mono)
