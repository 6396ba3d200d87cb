"""The echo canceller's compiled kernel, and choosing between it and the numpy path.

The per-block arithmetic of :mod:`.engine` (both echo estimates, the errors, the Kalman
and shadow updates, the suppressor's gains, the overlap-add, the coherence, leak and
distortion estimates) and the 320-point FFTs exist in numpy (:mod:`.numpy_kernel`, the
reference) and in C (``_kernel.c``, built at install when a compiler is there), the same
calls in both; in C an active block costs twelve calls, most of which take numpy several.
``compiled=None`` (the default) uses the C kernel when it was built and otherwise the
numpy one, logging once what to install; ``compiled=False`` forces numpy,
``compiled=True`` requires the kernel. The two paths agree to float32 rounding (sums in
another order, another FFT), not bit for bit: outputs ~110 dB apart on the tests' rooms,
every echo figure of the benchmark the same to 0.1 dB.
"""

from __future__ import annotations

import functools
import logging
from types import ModuleType

from edgevoice.audio.aec.base import AecError

_LOGGER = logging.getLogger(__name__)
INSTALL_HINT = ("install a C compiler and the Python headers (apt install gcc python3-dev) "
                "and reinstall edgevoice")


def load_kernel() -> ModuleType | None:
    """The compiled kernel (``edgevoice.audio.aec._kernel``), or None when it was not
    built (installed without a C compiler)."""
    try:
        from edgevoice.audio.aec import _kernel
    except ImportError:
        return None
    return _kernel


@functools.cache
def log_fallback() -> None:
    """Once per process: the numpy path runs because the kernel was not built."""
    _LOGGER.info("echo canceller: compiled kernel not built, running the numpy path "
                 "(~2x the CPU); to build it, %s", INSTALL_HINT)


def choose_kernel(compiled: bool | None) -> ModuleType | None:
    """The kernel to run: ``compiled`` None (when built), False (never) or True (required)."""
    if compiled is False:
        return None
    kernel = load_kernel()
    if kernel is None:
        if compiled:
            raise AecError(f"the echo canceller's compiled kernel is not built: {INSTALL_HINT}",
                           code="aec_kernel_missing")
        log_fallback()
    return kernel
