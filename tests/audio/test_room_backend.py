"""The simulated room: deterministic for a seed, and its echo path is what was configured."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from edgevoice.audio.errors import EndOfInput
from edgevoice.audio.frames import dbfs
from edgevoice.audio.io.room import SimulatedRoom, synthetic_impulse_response
from edgevoice.audio.io.wav import read_wav, write_wav

PERIOD = 160


def _noise(seconds: float, level: float = 3000.0, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(int(seconds * 16000)) * level).astype(np.int16)


def _drive(room: SimulatedRoom, played: np.ndarray, periods: int) -> tuple[np.ndarray, np.ndarray]:
    """Run the room like the duplex loop does: read one period, write one period."""
    mics, refs = [], []
    room.open()
    try:
        for k in range(periods):
            mics.append(room.read().mic)
            chunk = played[k * PERIOD : (k + 1) * PERIOD]
            out = np.zeros(PERIOD, np.int16)
            out[: len(chunk)] = chunk
            room.write(out)
            refs.append(out)
    finally:
        room.close()
    return np.concatenate(mics), np.concatenate(refs)


def _lag(signal: np.ndarray, reference: np.ndarray) -> int:
    """Lag (samples) at which ``reference`` best matches ``signal`` (FFT cross-correlation)."""
    n = len(signal) + len(reference)
    size = 1 << (n - 1).bit_length()
    corr = np.fft.irfft(np.fft.rfft(signal.astype(float), size) *
                        np.conj(np.fft.rfft(reference.astype(float), size)), size)
    return int(np.argmax(corr[: len(signal)]))


def test_same_seed_gives_same_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    played = _noise(1.0)
    talker = _noise(0.5, 2000, seed=3)
    runs = []
    for seed, folder in ((5, "a"), (5, "b"), (6, "c")):
        room = SimulatedRoom(PERIOD, speed=0, seed=seed, rt60_s=0.2, noise_dbfs=-50,
                             record_dir=tmp_path / folder)
        room.add_talker(talker, start_s=0.3, gain_db=-3)
        mic, _ = _drive(room, played, 100)
        runs.append((mic.tobytes(), (tmp_path / folder / "mic.wav").read_bytes()))
    assert runs[0] == runs[1]
    assert runs[0][0] != runs[2][0]


def test_pure_delay_echo_path_is_exactly_what_was_configured(tmp_path: Path) -> None:
    room = SimulatedRoom(PERIOD, speed=0, echo_gain_db=-9.0, echo_delay_ms=47.5, rt60_s=0,
                         noise_dbfs=-150, record_dir=tmp_path)
    played = _noise(2.0)
    mic, ref = _drive(room, played, 200)
    delay = round(0.0475 * 16000)
    speaker, _ = read_wav(tmp_path / "speaker.wav")
    # Speaker (emission) → mic: the configured delay; written reference → mic: plus one period.
    assert _lag(mic, speaker) == delay
    assert _lag(mic, ref) == delay + PERIOD
    window = slice(delay + PERIOD + 100, 30000)
    shifted = ref[: len(ref) - delay - PERIOD]
    gain = dbfs(mic[window]) - dbfs(shifted[window.start - delay - PERIOD : window.stop - delay - PERIOD])
    assert gain == pytest.approx(-9.0, abs=0.05)
    expected = np.rint(shifted.astype(float) * 10 ** (-9 / 20))
    assert np.max(np.abs(mic[delay + PERIOD :].astype(float) - expected)) <= 1.0


def test_reverberant_echo_path_peaks_at_the_bulk_delay_with_the_configured_level() -> None:
    room = SimulatedRoom(PERIOD, speed=0, echo_gain_db=-6.0, echo_delay_ms=120.0, rt60_s=0.3,
                         noise_dbfs=-150, seed=2)
    played = _noise(3.0)
    mic, ref = _drive(room, played, 300)
    assert _lag(mic, ref) == round(0.12 * 16000) + PERIOD
    steady = slice(16000, 40000)
    assert dbfs(mic[steady]) - dbfs(ref[steady]) == pytest.approx(-6.0, abs=0.5)


def test_synthetic_impulse_response_decays_at_its_rt60() -> None:
    ir = synthetic_impulse_response(0.4, seed=1)
    assert np.sum(ir * ir) == pytest.approx(1.0)
    assert int(np.argmax(np.abs(ir))) == 0
    energy = np.cumsum(ir[::-1] ** 2)[::-1]  # Schroeder backward integration
    decay_db = 10 * np.log10(energy / energy[0])
    t20 = np.argmax(decay_db < -25) - np.argmax(decay_db < -5)  # a T20 measure
    assert 3 * t20 / 16000 == pytest.approx(0.4, rel=0.2)


def test_impulse_response_from_a_wav_file(tmp_path: Path) -> None:
    ir = np.zeros(400, np.int16)
    ir[0], ir[320] = 20000, 10000  # direct path and one reflection 20 ms later
    write_wav(tmp_path / "ir.wav", ir)
    room = SimulatedRoom(PERIOD, speed=0, impulse_response=tmp_path / "ir.wav",
                         echo_delay_ms=0, echo_gain_db=0, noise_dbfs=-150)
    impulse = np.zeros(PERIOD * 10, np.int16)
    impulse[0] = 10000
    mic, _ = _drive(room, impulse, 10)
    peaks = np.flatnonzero(np.abs(mic) > 100)
    assert list(peaks) == [PERIOD, PERIOD + 320]
    assert mic[PERIOD] / mic[PERIOD + 320] == pytest.approx(2.0, rel=0.01)


def test_talkers_land_at_their_time_and_are_recorded_alone(tmp_path: Path) -> None:
    room = SimulatedRoom(PERIOD, speed=0, noise_dbfs=-40, echo_gain_db=-6, record_dir=tmp_path)
    talker = _noise(0.25, 5000, seed=11)
    room.add_talker(talker, start_s=0.5, gain_db=-6)
    mic, _ = _drive(room, _noise(1.0), 100)
    near, _ = read_wav(tmp_path / "near_end.wav")
    start = 8000
    assert not np.any(near[:start]) and not np.any(near[start + len(talker) :])
    expected = np.rint(talker * 10 ** (-6 / 20)).astype(np.int16)
    assert np.max(np.abs(near[start : start + len(talker)].astype(int) - expected)) <= 1
    assert dbfs(mic[start : start + 4000]) > dbfs(mic[start - 4000 : start]) + 3


def test_add_talker_from_another_thread_while_running() -> None:
    room = SimulatedRoom(PERIOD, speed=0, noise_dbfs=-150, echo_gain_db=-120)
    room.open()
    tone = (np.sin(np.arange(1600) * 0.3) * 8000).astype(np.int16)
    for _ in range(10):
        room.read()
        room.write(np.zeros(PERIOD, np.int16))
    worker = threading.Thread(target=room.add_talker, args=(tone,), kwargs={"start_s": None})
    worker.start()
    worker.join()
    assert room.now_s == pytest.approx(0.1)
    got = np.concatenate([room.read().mic for _ in range(10)])
    room.close()
    assert np.array_equal(got, tone)


def test_a_talker_after_s_from_now_starts_then_whole() -> None:
    """``after_s`` counts from the room's time when the talker is scheduled (under its
    lock), and the start it returns is where the talker's first sample lands."""
    room = SimulatedRoom(PERIOD, speed=0, noise_dbfs=-150, echo_gain_db=-120)
    room.open()
    for _ in range(25):  # 0.25 s in
        room.read()
        room.write(np.zeros(PERIOD, np.int16))
    tone = (np.sin(np.arange(1600) * 0.3) * 8000).astype(np.int16)
    start = room.add_talker(tone, after_s=0.1)
    assert start == pytest.approx(0.35)
    got = np.concatenate([room.read().mic for _ in range(30)])
    room.close()
    assert not np.any(got[:1600]) and np.array_equal(got[1600:3200], tone)


def test_speed_one_is_real_time_and_speed_zero_is_not_paced() -> None:
    assert not SimulatedRoom(PERIOD, speed=0).paced
    room = SimulatedRoom(PERIOD, speed=1.0)
    assert room.paced
    room.open()
    started = time.monotonic()
    for _ in range(21):
        room.read()
        room.write(np.zeros(PERIOD, np.int16))
    elapsed = time.monotonic() - started
    room.close()
    assert 0.18 <= elapsed < 0.6


def test_duration_ends_the_input() -> None:
    room = SimulatedRoom(PERIOD, speed=0, duration_s=0.05)
    room.open()
    for _ in range(5):
        room.read()
    with pytest.raises(EndOfInput):
        room.read()
    room.close()
