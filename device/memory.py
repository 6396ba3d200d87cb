"""Giving freed heap memory back to the operating system once the engines are loaded.

Loading piper, Silero and the ASR frees a lot of temporary memory (model bytes parsed
into tensors, onnxruntime's graph optimisation, the first synthesis's buffers); glibc
keeps it in its heaps, where it still counts as the daemon's resident memory.
:func:`release_memory` asks glibc to return it (``malloc_trim(0)``); the daemon calls
it once after its warm-up, and the reply speaker after a reply whose long chunk grew
piper's arena (once the arena has shrunk). Figures: ``docs/runtime.md`` ("Memory").

Elsewhere (macOS, musl, Windows) there is no ``malloc_trim`` and the call does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import sys
from functools import cache
from typing import Any

_LOGGER = logging.getLogger(__name__)


@cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # musl (Alpine) has no malloc_trim
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_memory() -> bool:
    """Collect Python's garbage, then return free heap pages to the OS. True when the C
    library released something; False when it had nothing to give or cannot (not glibc)."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    released = bool(trim(0))
    _LOGGER.debug("malloc_trim released memory: %s", released)
    return released


def resident_mb() -> float | None:
    """This process's resident memory (``VmRSS``) in MB, or None where /proc is missing."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None
