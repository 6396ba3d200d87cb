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


def test_echo_removed_is_not_reported_while_there_is_no_echo() -> None:
    """Telemetry's "echo reduction" with no echo would be a reading of the room's noise
    (tens of dB before the absence is known, ~0 after): none while the echo is absent, a
    figure again where there is echo."""
    ref = probe_signal(4.0, -18.0, seed=3)
    rng = np.random.default_rng(4)
    quiet_room = to_pcm(rng.standard_normal(len(ref)) * 10 ** (-70 / 20))
    echo, echo_ref = echo_scenario(seconds=4.0, delay_ms=120.0, echo_db=-20.0, seed=5)
    for mic, far, has_echo in ((*_quiet_then(ref, quiet_room), False), (*_quiet_then(echo_ref, echo), True)):
        aec = EdgevoiceCanceller()
        readings = []
        for start in range(0, len(mic) - PERIOD + 1, PERIOD):
            aec.process(mic[start:start + PERIOD], far[start:start + PERIOD])
            readings.append((aec.stats.echo_absent, aec.stats.erle_db))
        late = readings[-100:]
        if has_echo:
            assert not any(absent for absent, _ in late)
            assert all(erle is not None and erle > 10.0 for _, erle in late)
        else:
            assert all(absent for absent, _ in late)
            assert all(erle is None for absent, erle in readings if absent)


def test_the_noise_floor_is_the_quietest_level_and_rises_slowly() -> None:
    presence = EchoPresence(margin_db=3.0, min_periods=3, hold_periods=4, smoothing=1.0)
    for energy in (4.0, 1.0, 9.0):
        presence.quiet(energy)
    for _ in range(2):
        presence.far_alone(1.9)  # within 3 dB of the floor (1.0)
    presence.far_alone(40.0)  # heard once: the quiet periods must come in a row
    for _ in range(2):
        presence.far_alone(1.9)
    assert not presence.absent
    presence.far_alone(1.9)
    assert presence.absent
    fresh = EchoPresence(min_periods=1)
    fresh.far_alone(0.0)
    assert not fresh.absent  # no floor measured yet: unknown, so not absent


def test_once_absent_only_a_loudspeaker_heard_for_hold_periods_in_a_row_undoes_it() -> None:
    """A person, whom with no echo the suppressor cannot tell from the far end alone, does
    not bring it back in the middle of their barge-in; a loudspeaker switched on, whose
    sound the reference explains, does, within hold_periods."""
    presence = EchoPresence(margin_db=3.0, min_periods=3, hold_periods=4, smoothing=1.0)
    presence.quiet(1.0)
    for _ in range(3):
        presence.far_alone(1.0)
    for _ in range(3):
        presence.far_alone(40.0)  # 3 periods over the margin
    presence.far_alone(1.0)
    assert presence.absent
    for _ in range(10):
        presence.far_alone(40.0, explained=0.05)  # a person: not the reference's
    assert presence.absent
    for _ in range(3):
        presence.far_alone(40.0)
    assert presence.absent
    presence.far_alone(40.0)  # the fourth in a row: the loudspeaker is heard
    assert not presence.absent


def test_with_no_echo_the_suppressor_lets_a_person_through_whole() -> None:
    """A handset: the canceller has nothing to learn, so the residual its filter expects
    is the room and the person, and its suppressor took a person talking over the reply
    down (the realtime bench's missed talk-over: only "Sorry," of "Sorry, what time is
    it?" was heard). Once the echo reads as absent, every gain is 1, and stays so through
    the half second in which a barge-in is decided."""
    ref = probe_signal(4.6, -18.0, seed=3)
    rng = np.random.default_rng(4)
    room = rng.standard_normal(len(ref)) * 10 ** (-70 / 20)  # the room of the quiet second
    person = probe_signal(4.6, -30.0, seed=8).astype(np.float64) / 32768.0
    person[: 4 * RATE] = 0.0  # they talk over the reply from 4 s
    mic, ref = _quiet_then(ref, to_pcm(room + person))
    aec = EdgevoiceCanceller()
    out = aec.process_signal(mic, ref)
    span = slice(5 * RATE + RATE // 20, len(out))  # their first 0.55 s, less the first 50 ms

    def level(x: np.ndarray) -> float:
        return 10.0 * float(np.log10(np.mean(x[span].astype(np.float64) ** 2)))

    assert aec.stats.echo_absent
    assert level(out) > level(mic) - 0.5  # without the change: 1.3 dB taken
    # no echo, no residual for a barge-in to rise over (the unlearnt filter's estimate,
    # -18 to -40 dBFS here, kept a person at -30 dBFS from interrupting)
    assert aec.stats.residual_echo_dbfs <= -100.0


def test_with_no_echo_a_person_does_not_teach_the_filter_the_devices_voice() -> None:
    """With nothing to learn the Kalman filter learnt from a person talking over the reply
    (the suppressor cannot tell them without echo), and its estimate, the reference through
    those taps, went out of the canceller as the device's own voice: the recognizer heard
    "you said" after the device said "You said:". With no echo the filter stays empty, so
    after the person the output is the room again."""
    ref = probe_signal(7.0, -18.0, seed=3)
    rng = np.random.default_rng(4)
    room = rng.standard_normal(len(ref)) * 10 ** (-70 / 20)
    person = probe_signal(7.0, -20.0, seed=8).astype(np.float64) / 32768.0
    person[: 3 * RATE] = 0.0
    person[5 * RATE:] = 0.0  # 2 s of talk-over, then the device alone again
    mic, ref = _quiet_then(ref, to_pcm(room + person))
    out = EdgevoiceCanceller().process_signal(mic, ref)
    after = slice((1 + 5) * RATE + RATE // 5, len(out))  # the device alone, after the person

    def level(x: np.ndarray) -> float:
        return 10.0 * float(np.log10(np.mean(x[after].astype(np.float64) ** 2) + 1e-9))

    assert level(out) < level(mic) + 1.0
