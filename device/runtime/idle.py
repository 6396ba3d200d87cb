"""When an idle conversation starts a new session (``session_idle_reset_s``).

Idle time counts from the end of the last reply or of the person's last speech —
never through the device's own speech (a reply longer than the limit must not be
followed at once by a reset, maybe in the middle of the person's next sentence) and
never while the person is talking. :class:`IdleReset` is pure (the caller passes the
time in); :func:`watch` is the loop that asks it once a second.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

_LOGGER = logging.getLogger(__name__)


@dataclass(slots=True)
class IdleReset:
    last_activity: float = 0.0
    busy: bool = False  # a reply is in flight or the person is talking

    def activity(self, now: float) -> None:
        """Something happened (speech heard, a reply ended, a command)."""
        self.last_activity = now

    def set_busy(self, busy: bool, now: float) -> None:
        """The device started (True) or finished (False) talking or listening to a
        turn; idle time restarts when it finishes."""
        if self.busy and not busy:
            self.last_activity = now
        self.busy = busy

    def idle_for(self, now: float) -> float:
        return 0.0 if self.busy else max(0.0, now - self.last_activity)

    def due(self, now: float, limit_s: float) -> bool:
        return limit_s > 0 and not self.busy and self.idle_for(now) >= limit_s


async def watch(idle: IdleReset, limit_s: float, *, may_reset: Callable[[], bool],
                reset: Callable[[], Awaitable[None]]) -> None:
    """Start a new session (``reset``) each time ``idle`` has been quiet for ``limit_s``
    and ``may_reset()`` (idle, nobody mid-turn, something to forget). Runs until cancelled."""
    if limit_s <= 0:
        return
    while True:
        await asyncio.sleep(min(1.0, limit_s / 4))
        now = time.monotonic()
        if idle.due(now, limit_s) and may_reset():
            _LOGGER.info("no conversation for %.0f s: starting a new session", idle.idle_for(now))
            await reset()
