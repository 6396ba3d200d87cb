"""One thread for the BLAS library numpy calls into, in the daemon and its recognizer.

numpy's OpenBLAS starts a worker thread per core and splits a large enough product
across them; after each such call the workers spin for a while before they sleep. The
daemon's products are small (the turn model's 801 x 201 x 80 mel filterbank is the
largest), so splitting them gains a few milliseconds, and the spinning costs whole
cores at the moment they are scarcest. With speculation, piper renders the reply's first
piece while the turn model decides: measured in one process on the 2-core x86-64 (piper's
first piece begun 20 ms after a decision, medians of 36), piper took 147 and 159 ms beside
a decision with OpenBLAS's two threads, 124 and 132 with one; alone, 93-104 either way.
In the whole daemon the spinning worker took 32 ms of CPU in each ~200 ms that the first
piece was rendered (docs/speaking.md, "One thread for numpy's BLAS").

:func:`use_one_blas_thread` sets the limit at run time (threadpoolctl), so it holds
whatever imported numpy first. An ``OPENBLAS_NUM_THREADS`` in the environment is
overridden.
"""

from __future__ import annotations

import logging

_LOGGER = logging.getLogger(__name__)


def use_one_blas_thread() -> list[str]:
    """Limit every BLAS library loaded in this process to one thread. Returns what was
    limited (``"openblas 2 -> 1"``), empty when there was nothing to limit. Without
    threadpoolctl (a venv older than the dependency) it says so and changes nothing: the
    limit is a matter of speed, not of working."""
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        _LOGGER.warning("threadpoolctl is not installed, so numpy's BLAS keeps a thread per core "
                        "(slower first words beside the turn model): pip install threadpoolctl")
        return []

    before = [info for info in threadpool_info() if info.get("user_api") == "blas"]
    threadpool_limits(limits=1, user_api="blas")  # kept: not used as a context manager
    limited = [f"{info.get('internal_api', '?')} {info.get('num_threads', '?')} -> 1"
               for info in before if info.get("num_threads") != 1]
    return limited
