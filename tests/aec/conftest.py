"""Fixtures the AEC tests share."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest
from support.aec_corpus import corpus_modules


@pytest.fixture(scope="module")
def corpus() -> Iterator[tuple[ModuleType, ModuleType]]:
    """bench/aec_rooms' rooms and bench/aec's score modules, for a test module's corpus room."""
    with corpus_modules() as modules:
        yield modules
