"""Every key without the restart mark applies on reload, as docs/config.md promises:
it is either read from ``daemon.config`` at each use or carried into the running
daemon by an applier in ``device/runtime/live_config.py``. A new key must choose."""

from __future__ import annotations

import pytest

from edgevoice.device.config import Config
from edgevoice.device.runtime.live_config import APPLIERS, READ_AT_USE, is_restart_key, keys_of

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)


def test_every_key_without_the_restart_mark_has_a_way_to_apply_live() -> None:
    config = Config()
    unhandled = [key for key in keys_of(config)
                 if not is_restart_key(config, key) and key not in APPLIERS and key not in READ_AT_USE]
    assert not unhandled, (
        f"{unhandled}: add each to live_config.APPLIERS (how the running daemon takes the new "
        "value), to live_config.READ_AT_USE (read from daemon.config each time), or mark it "
        "restart=True in its section and regenerate docs/config.md"
    )


def test_the_live_tables_name_only_live_keys_that_exist() -> None:
    config = Config()
    keys = set(keys_of(config))
    listed = [*APPLIERS, *READ_AT_USE]
    assert [key for key in listed if key not in keys] == []
    assert [key for key in listed if is_restart_key(config, key)] == []
    assert set(APPLIERS).isdisjoint(READ_AT_USE)
