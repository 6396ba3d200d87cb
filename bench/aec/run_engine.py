"""Run one engine over one scenario in a child process (livekit can abort at exit).

    python bench/aec/run_engine.py ENGINE IN.npz OUT.npz

ENGINE is a name for ``create_canceller``, ``edgevoice-numpy`` (the edgevoice engine on
its numpy path, without the compiled kernel) or ``edgevoice@REV``: the edgevoice engine as
it was at git revision REV (its ``audio/aec`` modules loaded from git into this child
process; the compiled kernel, where that revision uses one, is the installed one), to
compare a change against its predecessor in the same run.
IN holds int16 ``mic``, ``near_only`` and ``reference``; OUT gets ``out`` (the full mic),
``out_near`` (the near end alone, reference silent), ``cpu_s`` and ``delay_ms``.
Ends with ``os._exit`` so native runtimes cannot abort the interpreter's teardown.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

_ROOT = Path(__file__).resolve().parents[2]
_REV_MODULES = ("ring", "fft", "fractional", "delay", "numpy_kernel", "leak", "distortion", "coherence",
                "echo_presence", "drift", "engine")  # in import order


def _engine_at(rev: str) -> Any:
    """The edgevoice canceller class from git revision ``rev``: each ``audio/aec`` module
    that exists there replaces the installed one in this process."""
    engine = None
    for name in _REV_MODULES:
        proc = subprocess.run(["git", "-C", str(_ROOT), "show", f"{rev}:audio/aec/{name}.py"],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            continue  # the module did not exist yet
        full = f"edgevoice.audio.aec.{name}"
        module = types.ModuleType(full)
        module.__file__ = f"{rev}:audio/aec/{name}.py"
        sys.modules[full] = module
        exec(compile(proc.stdout, module.__file__, "exec"), module.__dict__)  # our own code at REV
        engine = module
    if engine is None:
        raise SystemExit(f"no audio/aec/engine.py at {rev}")
    return engine.EdgevoiceCanceller


def _create(engine: str) -> Any:
    from edgevoice.audio.aec import create_canceller

    if "@" in engine:
        name, rev = engine.split("@", 1)
        if name != "edgevoice":
            raise SystemExit(f"only the edgevoice engine can be loaded from git, not {name!r}")
        return _engine_at(rev)()
    if engine == "edgevoice-numpy":
        return create_canceller("edgevoice", compiled=False)
    return create_canceller(engine)


def main() -> None:
    engine, src, dst = sys.argv[1:4]
    data = np.load(src)
    mic, near, ref = data["mic"], data["near_only"], data["reference"]
    aec = _create(engine)
    t0 = time.process_time()
    out = aec.process_signal(mic, ref)
    cpu = time.process_time() - t0
    delay = aec.stats.delay_ms
    aec.close()
    near_aec = _create(engine)
    out_near = near_aec.process_signal(near, np.zeros_like(ref))
    near_aec.close()
    np.savez(dst, out=out, out_near=out_near, cpu_s=cpu,
             delay_ms=np.nan if delay is None else delay, latency_ms=aec.latency_ms)


if __name__ == "__main__":
    code = 0
    try:
        main()
    except BaseException as err:
        print(f"run_engine: {err!r}", file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
