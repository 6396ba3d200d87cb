"""Tasks the ESPHome surface starts and keeps a reference to (a command, an announcement)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

_LOGGER = logging.getLogger(__name__)


class Background:
    """Runs coroutines as tasks, keeps them until done, logs a failure with ``what``."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _LOGGER.error("%s failed: %s", self.what, task.exception())

    def cancel(self) -> None:
        for task in list(self.tasks):
            task.cancel()
