"""Shared pytest set-up. Fixtures that start real peers live in ``tests/support``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def mock_spi_factory() -> Iterator[Any]:
    """gpiozero's MockFactory, made the default for the test: the mock SPI bus of an LED
    ring takes its software pins from the default factory."""
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    mock = MockFactory()
    previous = Device.pin_factory
    Device.pin_factory = mock
    yield mock
    mock.reset()
    Device.pin_factory = previous


@pytest.fixture(scope="session")
def moonshine_engine() -> Iterator[Any]:
    """The bundled Moonshine tiny-en, loaded once for the whole run (~1 s, ~150 MB)."""
    from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine
    from edgevoice.models import ModelKind, resolve_model

    loc = resolve_model("moonshine-tiny-en", ModelKind.ASR)
    engine = MoonshineEngine(loc.path, model_name=loc.name, language=loc.language)
    yield engine
    engine.close()


def pytest_sessionstart(session: object) -> None:
    """Under the installed-package check nothing may come from the source tree.

    ``image/board/installed.py`` (and ``./dev board``) run the tests marked ``installed``
    with ``EDGEVOICE_EXPECT_PREFIX`` set to the venv the wheel went into: if ``edgevoice``
    were imported from anywhere else (the checkout, an editable install) every result of
    that run would say nothing about the wheel, so the run stops as a failure.
    """
    expected = os.environ.get("EDGEVOICE_EXPECT_PREFIX")
    if not expected:
        return
    import pytest

    import edgevoice

    where = os.path.realpath(edgevoice.__file__)
    if not where.startswith(os.path.realpath(expected) + os.sep):
        pytest.exit(f"edgevoice was imported from {where}, not from the installed venv {expected}",
                    returncode=3)
