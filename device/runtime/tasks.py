"""Small asyncio helpers the runtime shares."""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections import deque
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
        _LOGGER.warning("task %s did not stop within %.1f s of being cancelled; it waits at %s",
                        task.get_name(), timeout_s, where_waiting(task))
        return
    with contextlib.suppress(asyncio.CancelledError):
        exc = task.exception()
        if exc is not None:
            _LOGGER.debug("task %s ended with %r while being cancelled", task.get_name(), exc)


async def wait_event(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``event``; True if it was set.

    Not ``asyncio.wait_for``: on Python 3.11 (Raspberry Pi OS Bookworm's) a cancel that lands
    in the loop iteration in which the awaited wait finishes is lost there (``wait_for``
    returns the result instead; fixed in 3.12). A barge-in's cancel of a reply was lost so,
    the reply ran on, and the conversation waited 5 s for it under its lock."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    return True


def where_waiting(task: asyncio.Task[Any]) -> str:
    """Where a suspended task waits: the chain of coroutines it awaits through, innermost
    first (what a task that does not stop when cancelled is stuck on). ``Task.get_stack``
    gives only the outermost frame of a suspended coroutine, so the chain is followed
    through each coroutine's ``cr_await``."""
    links: list[str] = []
    awaited: Any = task.get_coro()
    while awaited is not None and len(links) < 12:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "ag_frame", None)
        if frame is None:  # a future: the coroutine awaiting it is where the task waits
            break
        code = frame.f_code
        links.append(f"{code.co_name} ({code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "ag_await", None)
    return " <- ".join(reversed(links)) or "nothing (not started, or running)"


class AudioClock:
    """The audio clock as the event loop sees it.

    ``source`` is the duplex loop's own position (seconds of capture read so far), so
    "now" is where the audio is, not where the front end's processing has got to.
    :meth:`tick` (once per frame) remembers where the audio clock stood at each moment
    of the last minute, so a past ``time.monotonic()`` stamp maps onto the audio clock
    even if the audio thread fell behind real time in between.
    """

    def __init__(self, source: Callable[[], float], history: int = 6000,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._source = source
        self._monotonic = monotonic
        self._monos: deque[float] = deque(maxlen=history)
        self._audios: deque[float] = deque(maxlen=history)

    def now(self) -> float:
        # Through the same mapping as past stamps, so marks taken now and marks mapped
        # from stamps later never disagree about order.
        return self.at(self._monotonic())

    def tick(self) -> None:
        self._monos.append(self._monotonic())
        self._audios.append(self._source())

    def at(self, mono: float) -> float:
        """Audio time of a ``time.monotonic()`` stamp taken earlier."""
        monos = self._monos
        index = bisect.bisect_right(monos, mono) - 1
        if index < 0 or not monos:
            return self._source() - max(0.0, self._monotonic() - mono)
        following = self._audios[index + 1] if index + 1 < len(monos) else self._source()
        # Between two ticks the audio clock ran at most as far as the next tick says.
        return min(self._audios[index] + (mono - monos[index]), following)

    async def sleep_until(self, due_s: float, step_s: float = 0.05) -> None:
        """Return once the audio clock reaches ``due_s``. Slept in steps of at most ``step_s``
        of wall time: the audio clock runs behind real time under load, and ahead of it in a
        simulation at more than 1x."""
        # Polled: the audio clock moves on the audio thread, with no event the loop could await.
        while (remaining := due_s - self.now()) > 0.0:  # noqa: ASYNC110
            await asyncio.sleep(min(step_s, remaining))
