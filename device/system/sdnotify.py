"""systemd's notify protocol, without systemd libraries.

``READY=1`` once the audio devices are open, ``WATCHDOG=1`` from the event loop at
half of ``WATCHDOG_USEC`` (so a stuck loop gets the service restarted),
``STOPPING=1`` on shutdown, ``RELOADING=1`` around a config reload. Without
``NOTIFY_SOCKET`` every call does nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Mapping

_LOGGER = logging.getLogger(__name__)


class Notifier:
    """Sends datagrams to ``$NOTIFY_SOCKET`` (abstract names start with ``@``)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        path = env.get("NOTIFY_SOCKET", "")
        self._address = "\0" + path[1:] if path.startswith("@") else path
        self.watchdog_interval_s: float | None = None
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            # Ping at half the deadline, as sd_watchdog_enabled(3) recommends.
            self.watchdog_interval_s = int(usec) / 1e6 / 2
        self._socket: socket.socket | None = None

    @property
    def enabled(self) -> bool:
        return bool(self._address)

    def notify(self, message: str) -> bool:
        if not self._address:
            return False
        try:
            if self._socket is None:
                self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._socket.sendto(message.encode(), self._address)
        except OSError as err:
            _LOGGER.warning("systemd notify %r failed: %s", message.split("=", maxsplit=1)[0], err)
            return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.notify("READY=1" + (f"\nSTATUS={status}" if status else ""))

    def stopping(self) -> bool:
        return self.notify("STOPPING=1")

    def reloading(self) -> bool:
        # systemd ≥ 253 wants MONOTONIC_USEC with RELOADING=1.
        return self.notify(f"RELOADING=1\nMONOTONIC_USEC={time.monotonic_ns() // 1000}")

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={text}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    async def run_watchdog(self) -> None:
        """Ping the watchdog from the event loop until cancelled. A loop that stops
        turning stops pinging, and systemd restarts the service."""
        if self.watchdog_interval_s is None or not self.enabled:
            return
        while True:
            self.watchdog()
            await asyncio.sleep(self.watchdog_interval_s)
