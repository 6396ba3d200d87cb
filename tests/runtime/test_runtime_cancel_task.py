"""cancel_task: a task that does not stop when cancelled is reported with where it waits."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from edgevoice.device.runtime.tasks import cancel_task, wait_event


async def _ignores_cancellation(release: asyncio.Event) -> None:
    while True:
        try:
            await release.wait()
            return
        except asyncio.CancelledError:
            continue  # the fault the warning exists to find


async def _outer(release: asyncio.Event) -> None:
    await _ignores_cancellation(release)


async def _warnings_cancelling(body: Callable[[asyncio.Event], Coroutine[Any, Any, None]], name: str,
                               caplog: pytest.LogCaptureFixture) -> list[str]:
    """Run ``body`` as a task, cancel it with a 50 ms wait, then let it end; the warnings."""
    release = asyncio.Event()
    task = asyncio.create_task(body(release), name=name)
    await asyncio.sleep(0)
    try:
        with caplog.at_level(logging.WARNING, logger="edgevoice.device.runtime.tasks"):
            await cancel_task(task, timeout_s=0.05)
    finally:
        release.set()  # the task would otherwise outlive the test's event loop
        await task
    return [record.getMessage() for record in caplog.records]


async def test_a_task_that_ignores_its_cancellation_is_reported_where_it_waits(
        caplog: pytest.LogCaptureFixture) -> None:
    [message] = await _warnings_cancelling(_ignores_cancellation, "stubborn", caplog)
    assert message.startswith("task stubborn did not stop within 0.1 s of being cancelled; it waits at ")
    assert "_ignores_cancellation (test_runtime_cancel_task.py:" in message


async def test_the_report_follows_the_await_chain_to_the_innermost_wait(
        caplog: pytest.LogCaptureFixture) -> None:
    [message] = await _warnings_cancelling(_outer, "nested", caplog)
    where = message.split("it waits at ", 1)[1]
    # innermost first: the event's wait, the coroutine that ignores its cancellation, then
    # the task's own coroutine
    assert [link.split(" ", 1)[0] for link in where.split(" <- ")] == [
        "wait", "_ignores_cancellation", "_outer"], where


async def test_a_task_that_stops_is_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    task = asyncio.create_task(asyncio.sleep(10), name="sleeper")
    await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING):
        await cancel_task(task, timeout_s=1.0)
    assert task.cancelled()
    assert not caplog.records


async def test_wait_event_says_whether_the_event_came_in_time() -> None:
    event = asyncio.Event()
    assert not await wait_event(event, 0.01)
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await wait_event(event, 5.0)


async def test_a_cancel_that_meets_the_event_is_not_lost() -> None:
    """The event is set and the waiter cancelled in one loop iteration (a reply's last audio
    heard as a barge-in cancels it). ``asyncio.wait_for`` on Python 3.11 returned the wait's
    result there and the cancel was gone; ``wait_event`` ends cancelled."""

    async def poll(event: asyncio.Event) -> None:
        while True:  # as the reply's wait for its audio to be heard
            await wait_event(event, 0.5)
            event.clear()

    event = asyncio.Event()
    task = asyncio.create_task(poll(event))
    await asyncio.sleep(0.01)
    event.set()
    task.cancel()
    await asyncio.wait({task}, timeout=2)
    assert task.cancelled()
