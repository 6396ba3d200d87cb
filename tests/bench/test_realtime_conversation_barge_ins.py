"""bench/realtime_conversation.py tells a barge-in on a scheduled talk-over from one on the
person's next question and from one on nothing (the device taking its own voice for a
person): the figure behind "never interrupts itself" in its 10-minute runs."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

_BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    saved = list(sys.path)
    sys.path.insert(0, str(_BENCH))
    try:
        yield importlib.import_module("realtime_conversation")
    finally:
        sys.path[:] = saved


def test_each_line_is_counted_once_and_barge_ins_on_nothing_are_self_interruptions(
        bench: ModuleType) -> None:
    requests = [30.0, 44.0, 58.0]
    talk_overs = [36.5, 50.5, 64.5]
    # the first talk-over heard 0.3 s early (pre-roll), and again 1 s later (its comma ended a
    # turn); the second missed, so its reply played on into the next question (58.07); one
    # barge-in in the middle of a reply; the third talk-over 1.2 s late
    onsets = [36.2, 37.2, 58.07, 61.0, 65.7]
    taken, on_requests, on_nothing = bench.match_barge_ins(onsets, talk_overs, requests)
    assert (taken, on_requests, on_nothing) == (2, 1, [61.0])


def test_a_barge_in_outside_every_window_is_on_nothing(bench: ModuleType) -> None:
    assert bench.match_barge_ins([52.4, 55.1], [53.0], [40.0]) == (0, 0, [52.4, 55.1])
    assert bench.match_barge_ins([], [53.0], [40.0]) == (0, 0, [])
