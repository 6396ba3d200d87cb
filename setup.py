"""Build script for the one compiled part: the echo canceller's kernel.

Everything else is declared in pyproject.toml. The extension is ``optional``: without a
C compiler or the Python headers the install still succeeds and the canceller runs its
numpy reference path (it logs once what to install). ``./dev`` installs gcc and
python3-dev, so the development venv, CI and the Pi image always build it.
"""

from __future__ import annotations

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "edgevoice.audio.aec._kernel",
            sources=["audio/aec/_kernel.c"],
            # -ffp-contract=off: no fused multiply-adds (aarch64 would fuse them by
            # default), so every platform rounds like numpy's separate operations
            extra_compile_args=["-O3", "-ffp-contract=off"],
            optional=True,
        )
    ]
)
