"""numpy's BLAS held to one thread (audio/blas_threads.py), in a fresh process where OpenBLAS
starts with two, whatever imported numpy first."""

from __future__ import annotations

import json
import os
import subprocess
import sys

_CHILD = """
import json
import numpy as np
from threadpoolctl import threadpool_info
before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
a = np.random.default_rng(3).standard_normal((801, 201))
b = np.random.default_rng(4).standard_normal((201, 80))
product = a @ b
from edgevoice.audio.blas_threads import use_one_blas_thread
limited = use_one_blas_thread()
after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps({"before": before, "after": after, "limited": limited,
                  "same": bool(np.allclose(a @ b, product, rtol=1e-12, atol=1e-12))}))
"""


def test_every_blas_library_is_left_with_one_thread_and_products_are_unchanged() -> None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", _CHILD], check=True, capture_output=True, text=True,
                         env=env, timeout=60)
    report = json.loads(out.stdout)
    assert report["before"] and all(threads == 2 for threads in report["before"])
    assert report["after"] == [1] * len(report["before"])
    assert report["limited"] == ["openblas 2 -> 1"] * len(report["before"])
    assert report["same"]


def test_without_threadpoolctl_it_says_what_to_install_and_changes_nothing() -> None:
    child = """
import logging, sys
sys.modules["threadpoolctl"] = None  # an older venv, installed before the dependency
logging.basicConfig(level=logging.WARNING, format="%(message)s")
from edgevoice.audio.blas_threads import use_one_blas_thread
print(use_one_blas_thread())
"""
    out = subprocess.run([sys.executable, "-c", child], check=True, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "[]"
    assert "pip install threadpoolctl" in out.stderr
