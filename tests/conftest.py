"""Shared pytest set-up. Fixtures that start real peers live in ``tests/support``."""

from __future__ import annotations

import os

# Tests never read the machine's own /etc/edgevoice or ~/.config/edgevoice.
os.environ.setdefault("EDGEVOICE_TESTING", "1")


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
