"""sd_notify against a real Unix datagram socket, the way systemd listens."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgevoice.device.system.sdnotify import Notifier

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2)
    yield sock, path
    sock.close()


def test_ready_stopping_and_status_arrive(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = Notifier({"NOTIFY_SOCKET": path})
    assert notifier.ready("listening")
    assert sock.recv(4096) == b"READY=1\nSTATUS=listening"
    assert notifier.stopping()
    assert sock.recv(4096) == b"STOPPING=1"
    assert notifier.reloading()
    assert sock.recv(4096).startswith(b"RELOADING=1\nMONOTONIC_USEC=")
    notifier.close()


def test_abstract_socket_names(tmp_path: Path) -> None:
    name = f"edgevoice-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(2)
    try:
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert sock.recv(100) == b"READY=1"
    finally:
        sock.close()


def test_without_notify_socket_nothing_happens() -> None:
    notifier = Notifier({})
    assert not notifier.enabled
    assert not notifier.ready()
    assert notifier.watchdog_interval_s is None


def test_watchdog_for_another_pid_is_not_ours(listener: tuple[socket.socket, str]) -> None:
    _, path = listener
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}
    assert Notifier(env).watchdog_interval_s is None


async def test_watchdog_pings_at_half_the_deadline(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    sock.setblocking(False)
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"})
    assert notifier.watchdog_interval_s == pytest.approx(0.1)
    task = asyncio.create_task(notifier.run_watchdog())
    await asyncio.sleep(0.45)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    pings = []
    with contextlib.suppress(BlockingIOError):
        while True:
            pings.append(sock.recv(100))
    assert set(pings) == {b"WATCHDOG=1"}
    # 0.45 s at 0.1 s intervals: about five pings, never one per iteration of a busy loop.
    assert 3 <= len(pings) <= 7
