"""The console fixture: served on loopback (see support/console.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.console import Console, serving


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    async with serving(tmp_path, "console.transcripts=true", "console.command_burst=5",
                       "console.command_rate=0.5") as served:
        yield served
