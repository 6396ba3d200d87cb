"""Build script: package discovery over the folder → subpackage mapping, and the C kernel.

Everything else is declared in pyproject.toml.

Packages are discovered, not listed: every folder with an ``__init__.py`` under a code
folder that ``[tool.setuptools.package-dir]`` maps is a subpackage. A hand-kept list
drifted once (``edgevoice.device.runtime`` was missing, so an installed wheel had no
daemon); ``tests/packaging`` builds the wheel and fails if anything in the tree is not in it.

The extension is ``optional``: without a C compiler or the Python headers the install
still succeeds and the canceller runs its numpy reference path (it logs once what to
install). ``./dev`` installs gcc and python3-dev, so the development venv, CI and the Pi
image always build it. The duplex period loop (``edgevoice.audio.io._rtloop``) is optional in
the same way and also needs libasound2-dev; without it the pyalsaaudio loop runs.
"""

from __future__ import annotations

import os
import tomllib

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def discover_packages() -> list[str]:
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as handle:
        package_dir: dict[str, str] = tomllib.load(handle)["tool"]["setuptools"]["package-dir"]
    found: list[str] = []
    for package, folder in package_dir.items():
        base = os.path.join(HERE, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            if "__init__.py" not in filenames:
                dirnames[:] = []  # a folder without __init__.py is data, not a package
                continue
            relative = os.path.relpath(dirpath, base)
            found.append(package if relative == "." else package + "." + relative.replace(os.sep, "."))
    return sorted(set(found))


setup(
    packages=discover_packages(),
    ext_modules=[
        Extension(
            "edgevoice.audio.aec._kernel",
            sources=["audio/aec/_kernel.c"],
            # -ffp-contract=off: no fused multiply-adds (aarch64 would fuse them by
            # default), so every platform rounds like numpy's separate operations
            extra_compile_args=["-O3", "-ffp-contract=off"],
            optional=True,
        ),
        # The duplex period loop (audio/io/rtloop.py): its own thread on libasound. Optional
        # too: without libasound2-dev the pyalsaaudio loop runs (rtloop logs it once).
        Extension(
            "edgevoice.audio.io._rtloop",
            sources=["audio/io/_rtloop.c"],
            libraries=["asound"],
            extra_compile_args=["-O2", "-std=gnu11", "-Wall"],
            optional=True,
        ),
    ],
)
