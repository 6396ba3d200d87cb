"""Run one test body in a fresh interpreter.

Resident-memory figures are only meaningful in a process that holds nothing else: in the
whole suite's process, other tests' freed-but-resident heap pages are reused by the arena
being measured, so its growth no longer shows in RSS (CI saw "grew back only 11 MB" in a
1.3 GB process). The body is a module-level function of the test file; its assertion
message comes back as the failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_RUNNER = (
    "import runpy, sys\n"
    "namespace = runpy.run_path(sys.argv[1], run_name='fresh_process')\n"
    "namespace[sys.argv[2]]()\n"
)


def run_fresh(test_file: str, body: str, *, timeout_s: float = 180.0) -> None:
    """Call ``body`` (a function in ``test_file``) in a new Python; fail with its traceback."""
    tests_dir = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (tests_dir, env.get("PYTHONPATH", "")) if p)
    result = subprocess.run([sys.executable, "-c", _RUNNER, test_file, body], env=env,
                            capture_output=True, text=True, timeout=timeout_s, check=False)
    if result.returncode != 0:
        raise AssertionError(f"{body} failed in a fresh interpreter:\n{result.stderr[-4000:]}")
