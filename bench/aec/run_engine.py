"""Run one engine over one scenario in a child process (livekit can abort at exit).

    python bench/aec/run_engine.py ENGINE IN.npz OUT.npz

IN holds int16 ``mic``, ``near_only`` and ``reference``; OUT gets ``out`` (the full mic),
``out_near`` (the near end alone, reference silent), ``cpu_s`` and ``delay_ms``.
Ends with ``os._exit`` so native runtimes cannot abort the interpreter's teardown.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np


def main() -> None:
    from edgevoice.audio.aec import create_canceller

    engine, src, dst = sys.argv[1:4]
    data = np.load(src)
    mic, near, ref = data["mic"], data["near_only"], data["reference"]
    aec = create_canceller(engine)
    t0 = time.process_time()
    out = aec.process_signal(mic, ref)
    cpu = time.process_time() - t0
    delay = aec.stats.delay_ms
    aec.close()
    near_aec = create_canceller(engine)
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
