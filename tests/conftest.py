"""Shared pytest set-up. Fixtures that start real peers live in ``tests/support``."""

from __future__ import annotations

import os

# Tests never read the machine's own /etc/edgevoice or ~/.config/edgevoice.
os.environ.setdefault("EDGEVOICE_TESTING", "1")
