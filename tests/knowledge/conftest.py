"""Fixtures of the knowledge tests: the museum sample base, indexed once per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from edgevoice.device.config.sections.knowledge import KnowledgeConfig
from edgevoice.device.knowledge import KnowledgeBase

ROOT = Path(__file__).resolve().parents[2]
MUSEUM = ROOT / "examples" / "knowledge" / "museum"


@pytest.fixture(scope="session")
def museum_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("museum") / "index.sqlite3"
    KnowledgeBase(KnowledgeConfig(enabled=True, paths=(str(MUSEUM),)), index_path=index).open()
    return index


@pytest.fixture
def museum(museum_index: Path) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase(KnowledgeConfig(enabled=True, paths=(str(MUSEUM),)), index_path=museum_index)
    yield kb
    kb.close()


from support.mosquitto import broker, mqtt_pki  # noqa: E402  (fixtures of the sync tests)

__all__ = ["broker", "museum", "museum_index", "mqtt_pki"]
