"""Run one engine over one scenario in a child process (livekit can abort at exit).

    python bench/aec/run_engine.py ENGINE IN.npz OUT.npz

ENGINE is a name for ``create_canceller``, ``edgevoice-numpy`` (the edgevoice engine on
its numpy path, without the compiled kernel) or ``edgevoice@REV``: the edgevoice engine as
it was at git revision REV (its ``audio/aec`` modules loaded from git into this child
process, and its compiled kernel built from REV's ``_kernel.c``, cached by the source's
hash), to compare a change against its predecessor in the same run, CPU included.
IN holds int16 ``mic``, ``near_only`` and ``reference``; OUT gets ``out`` (the full mic),
``out_near`` (the near end alone, reference silent), ``cpu_s`` and ``delay_ms``.
Ends with ``os._exit`` so native runtimes cannot abort the interpreter's teardown.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

_ROOT = Path(__file__).resolve().parents[2]
_KERNEL = "edgevoice.audio.aec._kernel"
_SHARED_OBJECT = ("-shared", "-fPIC")
_REV_MODULES = ("ring", "fft", "fractional", "delay", "numpy_kernel", "leak", "distortion", "coherence",
                "echo_presence", "drift", "engine")  # in import order


def kernel_flags(setup_py: str) -> tuple[str, ...]:
    """The ``extra_compile_args`` that a setup.py's source gives the kernel's Extension,
    read from its syntax tree (setup.py is a script: importing it would run setup)."""
    for node in ast.walk(ast.parse(setup_py)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Extension" and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == _KERNEL):
            for keyword in node.keywords:
                if keyword.arg == "extra_compile_args":
                    return tuple(str(flag) for flag in ast.literal_eval(keyword.value))
            return ()
    raise ValueError(f"no Extension({_KERNEL!r}, ...) in this setup.py")


def _git_show(rev: str, path: str) -> bytes | None:
    proc = subprocess.run(["git", "-C", str(_ROOT), "show", f"{rev}:{path}"],
                          capture_output=True, check=False)
    return proc.stdout if proc.returncode == 0 else None


def _kernel_at(rev: str) -> None:
    """The compiled kernel of git revision ``rev`` in place of the installed one, in this
    process: built from that revision's ``_kernel.c`` with that revision's setup.py flags
    (once per source and flags, cached under the temp dir), so a before/after run compares
    the kernels too. A revision without one keeps the installed kernel (its engine ran
    numpy only)."""
    source = _git_show(rev, "audio/aec/_kernel.c")
    setup_py = _git_show(rev, "setup.py")
    if source is None or setup_py is None:
        return
    flags = (*_SHARED_OBJECT, *kernel_flags(setup_py.decode()))
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    cache = Path(tempfile.gettempdir()) / "edgevoice-aec-bench" / "kernels"
    key = hashlib.sha256(source + " ".join(flags).encode()).hexdigest()[:16]
    built = cache / f"{key}{suffix}"
    if not built.exists():
        cache.mkdir(parents=True, exist_ok=True)
        src = cache / f"{key}.{os.getpid()}.c"
        partial = cache / f"{key}.{os.getpid()}{suffix}"
        src.write_bytes(source)
        include = sysconfig.get_paths()["include"]
        compiler = os.environ.get("CC", "cc")
        done = subprocess.run([compiler, *flags, f"-I{include}", str(src), "-o", str(partial), "-lm"],
                              capture_output=True, text=True, check=False)
        src.unlink()
        if done.returncode != 0:
            raise SystemExit(f"could not build the kernel of {rev} with {compiler}: {done.stderr.strip()}")
        partial.replace(built)  # whole or not at all: two engines at a time may build it at once
    spec = importlib.util.spec_from_file_location(_KERNEL, built)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the kernel built for {rev} from {built}")
    kernel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernel)
    sys.modules[_KERNEL] = kernel
    import edgevoice.audio.aec as package  # after the kernel is in place

    package._kernel = kernel  # type: ignore[attr-defined]  # what `from ... import _kernel` reads


def _engine_at(rev: str) -> Any:
    """The edgevoice canceller class from git revision ``rev``: each ``audio/aec`` module
    that exists there replaces the installed one in this process, and so does its kernel."""
    _kernel_at(rev)
    engine = None
    for name in _REV_MODULES:
        source = _git_show(rev, f"audio/aec/{name}.py")
        if source is None:
            continue  # the module did not exist yet
        full = f"edgevoice.audio.aec.{name}"
        module = types.ModuleType(full)
        module.__file__ = f"{rev}:audio/aec/{name}.py"
        sys.modules[full] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)  # our own code at REV
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
