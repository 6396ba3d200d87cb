"""The AEC bench's room corpus (bench/aec_rooms) for tests: its modules, a tuning room, PCM.

Tests may read tuning rooms only: the engine was tuned on them; validation rooms only report.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "bench"


@contextmanager
def corpus_modules() -> Iterator[tuple[ModuleType, ModuleType]]:
    """bench/aec_rooms' ``rooms`` and bench/aec's ``score``, importable while inside."""
    saved = list(sys.path)
    sys.path.insert(0, str(BENCH / "aec_rooms"))
    sys.path.insert(1, str(BENCH / "aec"))
    try:
        yield importlib.import_module("rooms"), importlib.import_module("score")
    finally:
        sys.path[:] = saved  # bench/aec's bench.py and score.py must not shadow other modules


def tuning_room(rooms: ModuleType, number: int) -> Any:
    """A room of the tuning set, built (or read from the cache)."""
    tuning, _validation = rooms.split()
    assert number in tuning  # tuned on it, so it may be tested on; validation rooms only report
    return rooms.cached_room(rooms.room_specs()[number])


def pcm(x: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(x * 32768.0), -32768, 32767).astype(np.int16)
