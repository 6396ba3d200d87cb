"""bench/aec_rooms/bargein.py's second interruption: the person moved to start in a pause of
the device's words (a gap of 150 ms or more, 40 dB under its loudest, between 3 and 7 s),
100 ms into it, with nothing of them left where they were (issue 18)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest
from support.aec_corpus import corpus_modules

RATE = 16000


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    with corpus_modules():
        yield importlib.import_module("bargein")  # bench/aec_rooms/bargein.py


def _room(gaps: list[tuple[float, float]]) -> SimpleNamespace:
    """23 s: the device's words (noise) with silent ``gaps`` (seconds), a person's burst at
    8.2-9.0 s, the echo a tenth of the reference."""
    rng = np.random.default_rng(5)
    reference = rng.standard_normal(23 * RATE) * 0.1
    for a, b in gaps:
        reference[int(a * RATE):int(b * RATE)] = 0.0
    near = np.zeros_like(reference)
    near[int(8.2 * RATE):int(9.0 * RATE)] = rng.standard_normal(int(0.8 * RATE)) * 0.05
    return SimpleNamespace(reference=reference, near_clean=near, mic=0.1 * reference + near)


def test_the_person_starts_100_ms_into_the_first_long_enough_pause(bench: ModuleType) -> None:
    # a 100 ms gap is a pause between syllables, not one to start in; 2.5 s is before the window
    room = _room([(2.5, 2.9), (3.6, 3.7), (5.0, 5.3)])
    assert bench.pause_onset(room) == int(5.1 * RATE)
    assert bench.pause_onset(_room([(3.6, 3.7), (7.2, 7.6)])) is None


def test_the_moved_person_is_all_there_and_only_there(bench: ModuleType) -> None:
    room = _room([(5.0, 5.3)])
    at = bench.pause_onset(room)
    mic = bench.moved_person(room, at)
    person = mic - 0.1 * room.reference
    assert bench.onset(room) == int(8.2 * RATE)
    moved = person[at:at + int(0.8 * RATE)]
    assert np.allclose(moved, room.near_clean[int(8.2 * RATE):int(9.0 * RATE)], rtol=0, atol=1e-12)
    rest = np.delete(person, np.s_[at:at + int(0.8 * RATE)])
    assert float(np.max(np.abs(rest))) < 1e-12, "the person is left somewhere else too"
