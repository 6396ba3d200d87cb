"""Does the microphone hear the loudspeaker at all (audio/aec/echo_presence.py), through the
edgevoice engine: with no echo its stats say so, and with any echo worth the name they
never do, not even for the one period before the echo path is learnt."""

from __future__ import annotations

import numpy as np
from support.aec import echo_scenario, probe_signal, to_pcm

from edgevoice.audio.aec.echo_presence import EchoPresence
from edgevoice.audio.aec.engine import EdgevoiceCanceller

RATE = 16000
PERIOD = 160


def _run(mic: np.ndarray, ref: np.ndarray) -> list[tuple[bool, bool, bool]]:
    """(echo_absent, reference_ok, far_end_active) after each period."""
    aec = EdgevoiceCanceller()
    seen = []
    for start in range(0, len(mic) - PERIOD + 1, PERIOD):
        aec.process(mic[start:start + PERIOD], ref[start:start + PERIOD])
        stats = aec.stats
        seen.append((stats.echo_absent, stats.reference_ok, stats.far_end_active))
    return seen


def _quiet_then(ref: np.ndarray, mic: np.ndarray, quiet_s: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``quiet_s`` of the room before the loudspeaker starts (the noise floor is learnt there)."""
    rng = np.random.default_rng(9)
    n = int(quiet_s * RATE)
    noise = to_pcm(rng.standard_normal(n) * 10 ** (-70 / 20))
    return (np.concatenate([noise, mic]),
            np.concatenate([np.zeros(n, dtype=np.int16), ref]))


def test_a_microphone_that_hears_only_the_room_reads_as_no_echo() -> None:
    ref = probe_signal(4.0, -18.0, seed=3)
    rng = np.random.default_rng(4)
    room = to_pcm(rng.standard_normal(len(ref)) * 10 ** (-70 / 20))  # the same quiet room
    mic, ref = _quiet_then(ref, room)
    seen = _run(mic, ref)
    playing = [absent for absent, _, far in seen[100:] if far]
    assert not any(ok for _, ok, _ in seen)  # nothing was cancelled: nothing proven
    assert playing and not any(playing[:99])  # not before 100 periods of playing alone
    assert np.mean(playing[150:]) > 0.9


def test_echo_even_30_db_down_is_never_read_as_absent() -> None:
    for echo_db in (-6.0, -30.0):
        echo, ref = echo_scenario(seconds=5.0, delay_ms=120.0, echo_db=echo_db, seed=5)
        rng = np.random.default_rng(6)
        room = to_pcm(rng.standard_normal(len(echo)) * 10 ** (-70 / 20))
        mic, ref = _quiet_then(ref, (echo.astype(np.int32) + room).clip(-32768, 32767).astype(np.int16))
        assert not any(absent for absent, _, _ in _run(mic, ref)), echo_db


def test_the_noise_floor_is_the_quietest_level_and_rises_slowly() -> None:
    presence = EchoPresence(margin_db=3.0, min_periods=3)
    for energy in (4.0, 1.0, 9.0):
        presence.quiet(energy)
    for _ in range(3):
        presence.far_alone(1.9)  # within 3 dB of the floor (1.0)
    assert presence.absent
    presence.far_alone(40.0)  # the loudspeaker is heard: one period says so
    assert not presence.absent
    fresh = EchoPresence(min_periods=1)
    fresh.far_alone(0.0)
    assert not fresh.absent  # no floor measured yet: unknown, so not absent
