"""``edgevoice@REV`` in the AEC benches runs the engine as it was at a git revision, its
compiled kernel included (``bench/aec/run_engine.py``).

Until 7 December the revision's Python modules were loaded from git but the kernel was the
installed one, so a before/after run of a kernel change compared the new kernel with itself
(the CPU row said nothing). Each check runs in a child process, because the loader replaces
modules for the rest of the process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
# the last revision before the kernel had `leak` (7 December)
_BEFORE = "e8aca7f"

_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import run_engine
engine = run_engine._engine_at(sys.argv[2])()
from edgevoice.audio.aec import _kernel
rng = np.random.default_rng(1)
ref = (rng.standard_normal(32000) * 3000).astype(np.int16)
mic = np.concatenate([np.zeros(400, np.int16), ref[:-400] // 2])
out = engine.process_signal(mic, ref)
late = slice(16000, None)
power = lambda x: float(np.mean(x[late].astype(float) ** 2))
removed = 10 * np.log10(power(mic) / (power(out) + 1e-9))
print(engine.compiled, hasattr(_kernel, "leak"), round(float(removed)))
"""


def _at(rev: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(_ROOT / "bench" / "aec"), rev],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_an_older_revision_runs_on_its_own_kernel_and_the_checkout_on_its_own() -> None:
    known = subprocess.run(["git", "-C", str(_ROOT), "cat-file", "-e", f"{_BEFORE}^{{commit}}"],
                           capture_output=True, check=False)
    if known.returncode != 0:
        pytest.skip(f"this checkout's history does not reach {_BEFORE} (a shallow clone?): fetch it")
    compiled, leak, removed = _at(_BEFORE)
    assert (compiled, leak) == ("True", "False")  # its kernel, not the installed one
    assert int(removed) > 20  # and it cancels with it
    compiled, leak, _removed = _at("HEAD")
    assert (compiled, leak) == ("True", "True")


def test_the_kernel_is_built_with_the_flags_its_own_setup_py_gives_it() -> None:
    sys.path.insert(0, str(_ROOT / "bench" / "aec"))
    try:
        import run_engine
    finally:
        sys.path.pop(0)
    assert run_engine.kernel_flags((_ROOT / "setup.py").read_text()) == ("-O3", "-ffp-contract=off")
    changed = (_ROOT / "setup.py").read_text().replace('"-ffp-contract=off"', '"-ffp-contract=fast"')
    assert run_engine.kernel_flags(changed) == ("-O3", "-ffp-contract=fast")
    with pytest.raises(ValueError, match="no Extension"):
        run_engine.kernel_flags("from setuptools import setup\nsetup()\n")
