"""``edgevoice run`` as a real process: READY=1, events on stdout, SIGHUP reload,
SIGTERM shutdown with STOPPING=1 and exit 0, and a clear error for a missing device."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

CONFIG = """
[device]
id = "proc-test"
state_dir = "{state}"
[audio]
backend = "simulated"
volume = 0.8
[room]
speed = 1.0
[gpio]
enabled = false
[asr]
engine = "pocketsphinx"
[conversation]
session_idle_reset_s = 0
"""


def _events_until(stream: IO[str], wanted: str, timeout_s: float) -> list[dict[str, object]]:
    seen: list[dict[str, object]] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        event = json.loads(line)
        seen.append(event)
        if event["type"] == wanted:
            return seen
    raise AssertionError(f"no {wanted} event; saw {[e['type'] for e in seen]}")


def test_daemon_lifecycle_under_signals(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG.format(state=tmp_path / "state"))
    notify_path = str(tmp_path / "notify.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(90)
    # OpenBLAS would start two threads; the daemon holds it to one (audio/blas_threads.py)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="2000000", OPENBLAS_NUM_THREADS="2")
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgevoice.device.cli", "run", "--events", "--config", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert proc.stdout is not None
        assert notify.recv(200).startswith(b"READY=1")
        ready = _events_until(proc.stdout, "session.ready", 60)[-1]
        assert ready["device_id"] == "proc-test"
        assert notify.recv(200) == b"WATCHDOG=1"  # pinged from the event loop
        config.write_text(CONFIG.format(state=tmp_path / "state").replace("volume = 0.8", "volume = 0.3")
                          .replace('backend = "simulated"', 'backend = "wav"'))
        proc.send_signal(signal.SIGHUP)
        reloaded = _events_until(proc.stdout, "config.reloaded", 30)[-1]
        # The volume applies live; the backend only after a restart, and the event says so.
        assert reloaded["restart_keys"] == ["audio.backend"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        messages = []
        notify.settimeout(2)
        try:
            while True:
                messages.append(notify.recv(200))
        except TimeoutError:
            pass
        assert b"STOPPING=1" in messages
        assert proc.stderr is not None
        assert "numpy's BLAS held to one thread (openblas 2 -> 1)" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        notify.close()


def test_a_missing_capture_device_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[device]\nid = "x"\nstate_dir = "{tmp_path}"\n[audio]\nbackend = "alsa"\n'
                      'capture_device = "no_such_pcm"\nplayback_device = "no_such_pcm"\n'
                      "[gpio]\nenabled = false\n[asr]\nengine = \"pocketsphinx\"\n")
    result = subprocess.run(
        [sys.executable, "-m", "edgevoice.device.cli", "run", "--config", str(config)],
        check=False, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 4, result.stderr
    assert "no_such_pcm" in result.stderr
