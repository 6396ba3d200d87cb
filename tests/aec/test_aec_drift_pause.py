"""The edgevoice engine keeps drift and delay where they are across pauses and jumps.

Two behaviours found on bench/aec_rooms' tuning rooms (issue 18), each tested here on a
synthetic room where the behaviour alone decides the outcome:

- the two clocks part while the device is silent too: the drift compensation must go
  on between replies, or after each pause the filter faces an echo moved by the drift
  rate times the pause (at 150 ppm, 7 samples after 3 s) and re-learns it;
- after a path change that shadows the direct sound, GCC-PHAT's peak jumps to a
  reflection; moving the filter's start there put the true first arrival before its
  first tap, where no filter can cancel it.
"""

from __future__ import annotations

import numpy as np

from edgevoice.audio.aec.engine import EdgevoiceCanceller
from edgevoice.audio.aec.selftest import probe_signal
from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from tests.support.aec import echo_scenario, erle_db, room_ir, to_pcm

RATE = SAMPLE_RATE


def _played(ref: Pcm, drift_ppm: float) -> np.ndarray:
    x = ref.astype(np.float64) / 32768.0
    # a band-limited resampler is not needed here: what is tested is where the echo is
    played: np.ndarray = np.interp(np.arange(len(x)) * (1 + drift_ppm * 1e-6), np.arange(len(x)), x,
                                   right=0.0)
    return played


def _noise(n: int, level: float, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n) * level


def test_drift_compensation_runs_on_through_a_silent_reference() -> None:
    """+150 ppm; the far end talks 10 s, is silent for 6 s (the quiet path), talks
    again. The first 1.5 s after the pause must be cancelled about as well as the last
    1.5 s before it."""
    talk, pause = 10.0, 6.0
    first = probe_signal(talk, -18.0, seed=4)
    second = probe_signal(4.0, -18.0, seed=5)
    ref = np.concatenate((first, np.zeros(int(pause * RATE), dtype=np.int16), second))
    x = _played(ref, -150.0)  # the loudspeaker's clock slow: the echo arrives ever later
    bulk = int(0.08 * RATE)
    echo = np.convolve(np.concatenate((np.zeros(bulk), x)), room_ir(3))[: len(x)] * 0.5
    mic = to_pcm(echo + _noise(len(x), 10 ** (-60 / 20) * 0.1, 1))
    aec = EdgevoiceCanceller()
    out = aec.process_signal(mic, ref)
    lat = int(aec.latency_ms * RATE / 1000)
    resume = talk + pause

    def erle(a: float, b: float) -> float:
        m = mic[int(a * RATE):int(b * RATE)]
        return erle_db(m, out[int(a * RATE) + lat:int(b * RATE) + lat], 0.0)

    before = erle(talk - 1.5, talk)
    after = erle(resume, resume + 1.5)
    # with the compensation frozen through the pause: 10 dB after against 39 before
    assert after >= before - 6.0, f"echo removed after the pause {after:.1f} dB, before {before:.1f} dB"
    assert 120.0 < aec.drift_ppm < 180.0, aec.drift_ppm


def test_a_delay_estimate_that_jumps_to_a_reflection_does_not_move_the_filter() -> None:
    """Direct sound at 100 ms, a reflection 40 ms later; at 8 s the direct sound is
    shadowed to -10 dB below the reflection (a person in the way): the delay estimate
    moves to the reflection, while the echo still begins at the direct sound."""
    seconds, change = 16.0, 8.0
    ref = probe_signal(seconds, -18.0, seed=6)
    x = ref.astype(np.float64) / 32768.0
    d, r = int(0.100 * RATE), int(0.140 * RATE)
    tail = room_ir(3)[20:] * 0.3  # a reverberant tail after the reflection
    rir1 = np.zeros(r + len(tail))
    rir1[d], rir1[r] = 1.0, 0.6
    rir1[r:] += tail
    rir2 = rir1.copy()
    rir2[d] = 0.2  # shadowed: 10 dB under the reflection
    echo1 = np.convolve(x, rir1)[: len(x)]
    echo2 = np.convolve(x, rir2)[: len(x)]
    fade = np.clip((np.arange(len(x)) / RATE - change) / 0.3, 0.0, 1.0)
    echo = (echo1 * (1 - fade) + echo2 * fade) * 0.4
    mic = to_pcm(echo + _noise(len(x), 1e-4, 2))
    aec = EdgevoiceCanceller()
    n = 160
    out, linear = [], []
    for at in range(0, len(mic) - n + 1, n):
        out.append(aec.process(mic[at:at + n], ref[at:at + n]))
        linear.append(aec.linear)
    assert aec.stats.delay_ms is not None and aec.stats.delay_ms > 130.0  # it did jump
    # Moved with the estimate, the filter started 20 ms after the direct sound: the
    # linear filter then removed 14 dB, the suppressor hiding most of it (29 dB out).
    lin = erle_db(mic, np.concatenate(linear), seconds - 4.0, aec.latency_ms)
    assert lin >= 30.0, f"linear filter after the direct sound was shadowed: {lin:.1f} dB"
    late = erle_db(mic, np.concatenate(out), seconds - 4.0, aec.latency_ms)
    assert late >= 50.0, f"echo removed after the direct sound was shadowed: {late:.1f} dB"


def test_drift_at_a_delay_under_the_margin_is_followed_by_moving_the_taps() -> None:
    """The echo 5 ms after the reference (under the 15 ms margin, so no bulk delay to
    take off) and arriving ever earlier (+150 ppm: the loudspeaker's clock fast): the read
    cannot be sooner than now, so the filters' taps move earlier instead (drift.py). Before,
    the loop was held at zero there and the filter re-learnt the moving echo: 8 dB removed
    over the last 6 s, as with drift tracking off; now 29 (tuning room r02 and validation
    rooms r24 and r41 are such rooms)."""
    mic, ref = echo_scenario(seconds=12.0, delay_ms=5.0, drift_ppm=150.0)
    tracked = EdgevoiceCanceller()
    out = tracked.process_signal(mic, ref)
    still = EdgevoiceCanceller(track_drift=False)
    out_still = still.process_signal(mic, ref)
    assert -180.0 < tracked.drift_ppm < -120.0, tracked.drift_ppm
    erle, erle_still = (erle_db(mic, o, 6.0, tracked.latency_ms) for o in (out, out_still))
    assert erle >= erle_still + 15.0, f"echo removed {erle:.1f} dB, drift tracking off {erle_still:.1f} dB"
