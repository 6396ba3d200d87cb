"""After an xrun (a frame flagged ``discontinuity``) the front end re-aligns its echo
canceller: the delay is estimated afresh, and found where the echo now is."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from support.aec import echo_scenario

from edgevoice.audio.frames import DuplexFrame
from edgevoice.device.config import load_config
from edgevoice.device.runtime.daemon import build_front_end
from edgevoice.device.runtime.frontend import FrontEnd

P = 160


@pytest.fixture(scope="module")
def front() -> Iterator[FrontEnd]:
    loaded = load_config(None, ["asr.process=inline", "asr.engine=pocketsphinx"], search_paths=[])
    front = build_front_end(loaded.config)
    yield front
    front.close()


def _feed(front: FrontEnd, mic: np.ndarray, ref: np.ndarray, start: int) -> int:
    for offset in range(0, len(mic) - P + 1, P):
        front.process(DuplexFrame(start, mic[offset:offset + P], ref[offset:offset + P]))
        start += 1
    return start


def test_an_xrun_makes_the_canceller_estimate_the_delay_again(front: FrontEnd) -> None:
    assert front.canceller is not None
    mic, ref = echo_scenario(seconds=6.0, delay_ms=120.0, seed=2)
    index = _feed(front, mic, ref, 0)
    before = front.canceller.stats.delay_ms
    assert before is not None and abs(before - 120.0) < 3.0
    # the xrun moved the echo path: capture and playback restarted 60 ms closer
    mic, ref = echo_scenario(seconds=6.0, delay_ms=60.0, seed=3)
    front.process(DuplexFrame(index, mic[:P], ref[:P], discontinuity=True))
    assert front.xrun_realigned == 1
    assert front.canceller.stats.delay_ms is None  # the old estimate is gone at once
    _feed(front, mic[P:], ref[P:], index + 1)
    after = front.canceller.stats.delay_ms
    assert after is not None and abs(after - 60.0) < 3.0
    assert front.xrun_realigned == 1  # frames without the flag leave it alone
