"""Timers in the running daemon: the book, kept on disk, scheduled on the wall clock,
ringing with the timer earcon until "stop" is said (no wake word needed while it rings)
or the button is pressed.

The daemon owns one :class:`TimerService`; the local agent and the ``timer`` tool reach
it through ``DeviceActions.timers``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgevoice.device.runtime.tasks import cancel_task, wait_event
from edgevoice.device.timers.model import TimerBook
from edgevoice.device.timers.phrases import (
    TimerAction,
    describe_cancelled,
    describe_left,
    describe_set,
    parse_timer_request,
)
from edgevoice.device.timers.store import FILE_NAME, load_book, save_book

_LOGGER = logging.getLogger(__name__)

RING_PERIOD_S = 2.0  # one timer earcon (0.4 s) and a pause
RING_MAX_S = 300.0  # a timer nobody stops goes quiet after five minutes
TIMER_EVENT = "timer.changed"


class TimerService:
    def __init__(
        self,
        state_dir: Path,
        *,
        ring: Callable[[], None],
        on_ringing: Callable[[bool], None],
        emit: Callable[..., object],
        on_countdown: Callable[[float | None], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``ring`` plays the earcon once; ``on_ringing`` shows it (LEDs) and lets "stop"
        be said without the wake word while it rings; ``emit`` puts events on the bus;
        ``on_countdown`` gets :meth:`TimerBook.countdown` about once a second while a
        timer runs, and None once none does; ``clock`` is the wall clock."""
        self.path = state_dir / FILE_NAME
        self._ring = ring
        self._on_ringing = on_ringing
        self._emit = emit
        self._on_countdown = on_countdown
        self._countdown: float | None = None
        self._clock = clock
        self.book = load_book(self.path)
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ringer: asyncio.Task[None] | None = None

    # --- life cycle -------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="timers")
        if self.book.timers:
            _LOGGER.info("%d timer(s) carried over from before the restart", len(self.book.timers))

    async def stop(self) -> None:
        for task in (self._task, self._ringer):
            await cancel_task(task)  # a cancelled caller stays cancelled

    # --- what the agent and tools do --------------------------------------------------

    async def handle(self, action: str, name: str | None = None,
                     seconds: float | None = None) -> dict[str, Any]:
        """Set, read or cancel; ``{"say": what to tell the person, "timers": [...]}``."""
        now = self._clock()
        if action == TimerAction.SET:
            if seconds is None:
                raise ValueError("set needs a duration")
            book, timer = self.book.add(name or "timer", seconds, now)
            await self._commit(book)
            say = describe_set(timer)
        elif action == TimerAction.LEFT:
            say = describe_left(self.book.timers, now, name)
        elif action == TimerAction.CANCEL:
            book, gone = self.book.cancel(name)
            await self._commit(book)
            say = describe_cancelled(gone, name, len(self.book.timers) + len(gone))
        else:
            raise ValueError(f"unknown timer action {action!r}: set, left or cancel")
        return {"say": say, "timers": self.snapshot()["timers"]}

    async def handle_text(self, text: str) -> str | None:
        """The spoken answer when ``text`` is a timer request, else None."""
        request = parse_timer_request(text)
        if request is None:
            return None
        result = await self.handle(str(request.action), request.name, request.seconds)
        return str(result["say"])

    def intercept(self, text: str) -> str | None:
        """For the conversation: while a timer rings, "stop" (or "cancel the timer")
        stops it, whatever the agent: "" (nothing to say). Else None."""
        if not self.book.ringing:
            return None
        from edgevoice.device.runtime.controls import Control, control_of

        request = parse_timer_request(text)
        if control_of(text) is Control.STOP or (request is not None and request.action is TimerAction.CANCEL):
            self.stop_ringing()
            return ""
        return None

    def stop_ringing(self) -> bool:
        """Silence every ringing timer (the button, "stop"); True when one rang."""
        book, rung = self.book.stop_ringing()
        if not rung:
            return False
        self._replace(book)
        _LOGGER.info("timer(s) %s stopped", ", ".join(t.name for t in rung))
        return True

    def snapshot(self) -> dict[str, Any]:
        now = self._clock()
        nxt = self.book.next_due()
        return {
            "timers": [t.as_dict(now) for t in sorted(self.book.timers, key=lambda t: t.ends_at)],
            "timer_ringing": self.book.ringing,
            "next_timer_at": (dt.datetime.fromtimestamp(nxt.ends_at, dt.UTC).isoformat(timespec="seconds")
                              if nxt is not None else None),
        }

    # --- internals ----------------------------------------------------------------------

    async def _commit(self, book: TimerBook) -> None:
        await asyncio.to_thread(save_book, self.path, book)
        self._replace(book, saved=True)

    def _replace(self, book: TimerBook, *, saved: bool = False) -> None:
        ringing_before = self.book.ringing
        self.book = book
        if not saved:
            try:
                save_book(self.path, book)  # small; a timer stopped must stay stopped after a restart
            except OSError as err:
                _LOGGER.warning("saving the timers to %s failed: %s", self.path, err)
        if ringing_before and not book.ringing:
            self._on_ringing(False)
        self._emit(TIMER_EVENT, **self.snapshot())
        self._changed.set()

    async def _run(self) -> None:
        while True:
            now = self._clock()
            book, newly = self.book.due(now)
            if newly:
                self._replace(book)
                _LOGGER.info("timer(s) %s ringing", ", ".join(t.name for t in newly))
                if self._ringer is None or self._ringer.done():
                    self._ringer = asyncio.create_task(self._ring_until_stopped(), name="timer-ring")
            self._show_countdown(now)
            nxt = self.book.next_due()
            # Wake at the next timer's end, at least once a second (the wall clock may jump).
            wait = 1.0 if nxt is None else min(1.0, max(0.0, nxt.ends_at - now))
            self._changed.clear()
            await wait_event(self._changed, wait)

    def _show_countdown(self, now: float) -> None:
        # Every pass of _run (each second, and at once after a change); "none" only once.
        if self._on_countdown is None:
            return
        countdown = self.book.countdown(now)
        if countdown is None and self._countdown is None:
            return
        self._countdown = countdown
        self._on_countdown(countdown)

    async def _ring_until_stopped(self) -> None:
        self._on_ringing(True)
        started = time.monotonic()
        try:
            while self.book.ringing and time.monotonic() - started < RING_MAX_S:
                self._ring()
                self._changed.clear()
                await wait_event(self._changed, RING_PERIOD_S)
        finally:
            if self.book.ringing:
                _LOGGER.info("nobody stopped the timer in %.0f s: silencing it", RING_MAX_S)
                self.stop_ringing()
            self._on_ringing(False)
