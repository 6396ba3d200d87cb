"""A console that cannot start costs the device its screen, not its voice."""

from __future__ import annotations

import socket
from pathlib import Path

from support.device_harness import running_device

from edgevoice.device.events import EventType


async def test_a_busy_port_is_an_error_event_and_the_device_still_answers(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        overrides = ("console.enabled=true", f"console.listen=127.0.0.1:{port}", "llm.provider=local",
                     "local.word_delay_ms=0")
        async with running_device(tmp_path, overrides) as device:
            assert device.daemon.console is None
            error = next(e for e in device.events if e.type == EventType.ERROR)
            assert error.data["source"] == "console" and error.data["code"] == "console_failed"
            assert f"127.0.0.1:{port}" in error.data["message"]
            device.say("hello there")
            done = await device.wait_for(EventType.REPLY_DONE)
            assert done.data["status"] == "completed"
