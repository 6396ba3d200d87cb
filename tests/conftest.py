"""Shared pytest set-up. Fixtures that start real peers live in ``tests/support``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def moonshine_engine() -> Iterator[Any]:
    """The bundled Moonshine tiny-en, loaded once for the whole run (~1 s, ~150 MB)."""
    from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine
    from edgevoice.models import ModelKind, resolve_model

    loc = resolve_model("moonshine-tiny-en", ModelKind.ASR)
    engine = MoonshineEngine(loc.path, model_name=loc.name, language=loc.language)
    yield engine
    engine.close()
