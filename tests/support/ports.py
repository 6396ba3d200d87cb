"""A loopback TCP port nobody listens on, for the servers the tests start."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port the kernel just handed out and let go of. Another process may take it before
    the caller binds it; two calls may return the same port (tests/support/mosquitto.py
    draws again when it needs two)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
