"""The simulated room with a microphone array: per-mic delays, directions, echo and noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgevoice.audio.array.doa import SrpPhat, angle_difference_deg
from edgevoice.audio.array.geometry import SPEED_OF_SOUND_M_S, ArrayGeometry, parse_geometry
from edgevoice.audio.array.stft import StreamingStft
from edgevoice.audio.frames import dbfs
from edgevoice.audio.io.room import SimulatedRoom
from edgevoice.audio.io.room_array import DEFAULT_SPEAKER_POSITION_M, SINC_HALF_TAPS, ArrayAcoustics
from edgevoice.audio.io.wav import read_wav

PERIOD = 160
RATE = 16000
PRESETS = ("respeaker-4mic", "respeaker-6mic-circular")


def _noise(seconds: float, level: float = 3000.0, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(int(seconds * RATE)) * level).astype(np.int16)


def _run(room: SimulatedRoom, periods: int, played: np.ndarray | None = None
         ) -> tuple[np.ndarray, np.ndarray]:
    """Read and write like the duplex loop: (mic (samples,), mics (samples, N))."""
    mic, mics = [], []
    room.open()
    try:
        for k in range(periods):
            captured = room.read()
            assert captured.mics is not None
            mic.append(captured.mic)
            mics.append(captured.mics)
            out = np.zeros(PERIOD, np.int16)
            if played is not None:
                chunk = played[k * PERIOD : (k + 1) * PERIOD]
                out[: len(chunk)] = chunk
            room.write(out)
    finally:
        room.close()
    return np.concatenate(mic), np.concatenate(mics)


def _quiet_room(geometry: ArrayGeometry, **kwargs: float) -> SimulatedRoom:
    settings: dict[str, float] = {"rt60_s": 0.0, "noise_dbfs": -150.0, "echo_gain_db": -120.0}
    settings.update(kwargs)
    return SimulatedRoom(PERIOD, speed=0, geometry=geometry, **settings)  # type: ignore[arg-type]


def _lag_samples(signal: np.ndarray, reference: np.ndarray, band_hz: tuple[float, float] = (100.0, 6000.0),
                 oversample: int = 64) -> float:
    """Sub-sample lag of ``signal`` behind ``reference``: GCC-PHAT, oversampled inverse FFT."""
    size = 1 << (len(signal) + len(reference) - 1).bit_length()
    cross = np.fft.rfft(signal.astype(float), size) * np.conj(np.fft.rfft(reference.astype(float), size))
    freqs = np.fft.rfftfreq(size, 1.0 / RATE)
    cross = np.where((freqs >= band_hz[0]) & (freqs <= band_hz[1]), cross / (np.abs(cross) + 1e-12), 0.0)
    corr = np.fft.irfft(cross, size * oversample)
    peak = int(np.argmax(corr))
    if peak > len(corr) // 2:
        peak -= len(corr)
    return peak / oversample


def _direction(geometry: ArrayGeometry, mics: np.ndarray, start_s: float, stop_s: float) -> float:
    srp = SrpPhat(geometry, frame_size=4 * PERIOD)
    stft = StreamingStft(PERIOD, geometry.mic_count, overlap=4)
    cross = np.zeros((srp.pair_count, stft.bins), complex)
    for k in range(int(start_s * RATE) // PERIOD, int(stop_s * RATE) // PERIOD):
        cross += srp.cross_spectra(stft.analyse(mics[k * PERIOD : (k + 1) * PERIOD].astype(float)))
    return srp.direction(cross)[0]


@pytest.mark.parametrize("preset", PRESETS)
def test_mics_come_in_geometry_order_and_mic_is_their_average(preset: str, tmp_path: Path) -> None:
    geometry = parse_geometry(preset)
    room = SimulatedRoom(PERIOD, speed=0, geometry=geometry, noise_dbfs=-40, record_dir=tmp_path)
    room.add_talker(_noise(0.5), start_s=0.1)
    mic, mics = _run(room, 60, _noise(1.0, seed=2))
    assert mics.shape == (60 * PERIOD, geometry.mic_count)
    assert mics.dtype == np.int16 and mic.dtype == np.int16
    assert np.array_equal(mic, np.rint(mics.astype(float).mean(axis=1)).astype(np.int16))
    assert np.std(mics[:, 0].astype(float) - mics[:, 1]) > 100  # the mics differ
    with_array, _ = read_wav(tmp_path / "mic.wav")
    assert np.array_equal(with_array, mic)
    recorded = np.frombuffer((tmp_path / "mics.wav").read_bytes()[44:], "<i2")
    assert np.array_equal(recorded.reshape(-1, geometry.mic_count), mics)


def test_same_seed_gives_same_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    geometry = parse_geometry("respeaker-4mic")
    runs = []
    for seed, folder in ((4, "a"), (4, "b"), (5, "c")):
        room = SimulatedRoom(PERIOD, speed=0, geometry=geometry, rt60_s=0.2, noise_dbfs=-50, seed=seed,
                             record_dir=tmp_path / folder)
        room.add_talker(_noise(0.4, 2000, seed=3), start_s=0.2, azimuth_deg=100)
        mic, mics = _run(room, 80, _noise(1.0))
        runs.append((mic.tobytes(), mics.tobytes(), (tmp_path / folder / "mics.wav").read_bytes()))
    assert runs[0] == runs[1]
    assert runs[0][1] != runs[2][1]


@pytest.mark.parametrize("preset", PRESETS)
def test_a_talkers_inter_mic_delays_are_the_geometrys_to_a_fraction_of_a_sample(preset: str) -> None:
    geometry = parse_geometry(preset)
    for azimuth in (0.0, 37.0, 151.5, 268.0):
        room = _quiet_room(geometry)
        room.add_talker(_noise(0.6), start_s=0.05, azimuth_deg=azimuth)
        _, mics = _run(room, 70)
        expected = (geometry.delays_s(azimuth) - geometry.delays_s(azimuth)[0]) * RATE
        measured = np.array([_lag_samples(mics[:, m], mics[:, 0]) for m in range(geometry.mic_count)])
        # rounding delays to whole samples would be off by up to half a sample
        assert np.max(np.abs(measured - expected)) < 0.05, (azimuth, measured, expected)


def test_a_talker_without_an_azimuth_stands_at_the_rooms_default() -> None:
    geometry = parse_geometry("respeaker-4mic")
    room = _quiet_room(geometry)
    room.talker_azimuth_deg = 210.0
    room.add_talker(_noise(0.6), start_s=0.05)
    _, mics = _run(room, 70)
    expected = (geometry.delays_s(210.0) - geometry.delays_s(210.0)[0]) * RATE
    measured = np.array([_lag_samples(mics[:, m], mics[:, 0]) for m in range(4)])
    assert np.max(np.abs(measured - expected)) < 0.05


def test_a_talkers_start_is_its_arrival_at_the_arrays_centre() -> None:
    geometry = parse_geometry("respeaker-6mic-circular")
    room = _quiet_room(geometry)
    talker = _noise(0.3)
    room.add_talker(talker, start_s=0.1, azimuth_deg=45.0)
    _, mics = _run(room, 40)
    expected = 0.1 * RATE + geometry.delays_s(45.0) * RATE
    measured = np.array([_lag_samples(mics[:, m], talker) for m in range(geometry.mic_count)])
    assert np.max(np.abs(measured - expected)) < 0.05


@pytest.mark.parametrize("preset", PRESETS)
def test_srp_phat_finds_talkers_in_a_reverberant_noisy_room(preset: str) -> None:
    geometry = parse_geometry(preset)
    azimuths = (10.0, 95.0, 200.0, 305.0)
    room = SimulatedRoom(PERIOD, speed=0, geometry=geometry, rt60_s=0.3, talker_drr_db=0.0,
                         noise_dbfs=-45, seed=1)
    for k, azimuth in enumerate(azimuths):
        room.add_talker(_noise(0.5, seed=k), start_s=0.1 + 0.7 * k, azimuth_deg=azimuth)
    _, mics = _run(room, 300)
    for k, azimuth in enumerate(azimuths):
        start = 0.15 + 0.7 * k
        found = _direction(geometry, mics, start, start + 0.4)
        assert angle_difference_deg(found, azimuth) <= 4.0, (azimuth, found)


def test_a_tv_at_another_azimuth_is_found_at_its_own_direction() -> None:
    geometry = parse_geometry("respeaker-4mic")
    room = SimulatedRoom(PERIOD, speed=0, geometry=geometry, rt60_s=0.25, noise_dbfs=-50, seed=3,
                         talker_azimuth_deg=40.0)
    room.add_talker(_noise(0.6, seed=1), start_s=0.1)  # the person, at the room's default
    room.add_talker(_noise(0.6, seed=2), start_s=1.0, gain_db=-6, azimuth_deg=230.0)  # the TV
    _, mics = _run(room, 180, _noise(1.8, 1000, seed=9))
    person = _direction(geometry, mics, 0.15, 0.65)
    tv = _direction(geometry, mics, 1.05, 1.55)
    assert angle_difference_deg(person, 40.0) <= 4.0
    assert angle_difference_deg(tv, 230.0) <= 4.0


@pytest.mark.parametrize("preset", PRESETS)
def test_the_echo_reaches_every_mic_at_its_distance_and_the_configured_level(preset: str,
                                                                            tmp_path: Path) -> None:
    geometry = parse_geometry(preset)
    room = SimulatedRoom(PERIOD, speed=0, geometry=geometry, echo_gain_db=-9.0, echo_delay_ms=30.0,
                         rt60_s=0.0, noise_dbfs=-150, record_dir=tmp_path)
    _, mics = _run(room, 150, _noise(1.5))
    speaker, _ = read_wav(tmp_path / "speaker.wav")
    # near field: each mic's own distance to the loudspeaker, relative to the centre's
    source = np.asarray(DEFAULT_SPEAKER_POSITION_M)
    distance = np.linalg.norm(geometry.centred() - source, axis=1)
    expected = 0.030 * RATE + (distance - np.linalg.norm(source)) / SPEED_OF_SOUND_M_S * RATE
    assert np.ptp(expected) > 0.3  # the mics really are at different distances
    steady = slice(2000, 22000)
    for m in range(geometry.mic_count):
        assert _lag_samples(mics[:, m], speaker) == pytest.approx(expected[m], abs=0.05)
        level = dbfs(mics[steady, m]) - dbfs(speaker[steady.start - 480 : steady.stop - 480])
        assert level == pytest.approx(-9.0, abs=0.1)


@pytest.mark.parametrize(("rt60_s", "delay_ms"), [(0.3, 40.0), (0.0, 0.0)])
def test_the_echo_level_holds_on_every_mic_with_reverberation_and_without_delay(rt60_s: float,
                                                                                 delay_ms: float) -> None:
    geometry = parse_geometry("respeaker-6mic-circular")
    room = SimulatedRoom(PERIOD, speed=0, geometry=geometry, echo_gain_db=-6.0, echo_delay_ms=delay_ms,
                         rt60_s=rt60_s, noise_dbfs=-150, seed=2)
    played = _noise(3.0)
    _, mics = _run(room, 300, played)
    steady = slice(16000, 44000)
    for m in range(geometry.mic_count):
        assert dbfs(mics[steady, m]) - dbfs(played[steady]) == pytest.approx(-6.0, abs=0.5)


def test_noise_is_diffuse_with_the_sinc_coherence_at_its_level() -> None:
    geometry = parse_geometry("respeaker-4mic")
    room = SimulatedRoom(PERIOD, speed=0, geometry=geometry, echo_gain_db=-120, noise_dbfs=-30.0, seed=6)
    _, mics = _run(room, 600)
    signal = mics.astype(float)
    for m in range(4):
        assert dbfs(mics[:, m]) == pytest.approx(-30.0, abs=0.3)
    frame = 256
    window = np.hanning(frame)
    frames = signal[: len(signal) // frame * frame].reshape(-1, frame, 4) * window[None, :, None]
    spectra = np.fft.rfft(frames, axis=1)  # (frames, bins, mics)
    freqs = np.fft.rfftfreq(frame, 1.0 / RATE)
    points = geometry.centred()
    for i, j in ((0, 1), (0, 2)):  # a side of the square and its diagonal
        cross = np.mean(spectra[:, :, i] * np.conj(spectra[:, :, j]), axis=0)
        power = np.sqrt(np.mean(np.abs(spectra[:, :, i]) ** 2, axis=0)
                        * np.mean(np.abs(spectra[:, :, j]) ** 2, axis=0))
        coherence = np.real(cross / power)
        distance = np.linalg.norm(points[i] - points[j])
        expected = np.sinc(2 * freqs * distance / SPEED_OF_SOUND_M_S)
        band = (freqs > 60) & (freqs < 7500)
        assert np.max(np.abs(coherence[band] - expected[band])) < 0.12, (i, j)
        assert np.mean(coherence[freqs < 300]) > 0.9  # not independent
        assert np.mean(np.abs(coherence[freqs > 4000])) < 0.2  # not one signal copied


def _acoustics(geometry: ArrayGeometry, rt60_s: float, drr_db: float) -> ArrayAcoustics:
    return ArrayAcoustics(geometry, period_samples=PERIOD, rate=RATE, echo_delay_samples=480, echo_gain=0.5,
                          rt60_s=rt60_s, impulse_response=None, noise_rms=0.0, talker_drr_db=drr_db,
                          speaker_position_m=DEFAULT_SPEAKER_POSITION_M, seed=0)


def test_talker_reverberation_is_decorrelated_between_mics_and_the_direct_path_is_not() -> None:
    geometry = parse_geometry("respeaker-4mic")
    responses = _acoustics(geometry, rt60_s=0.4, drr_db=3.0).talker_responses(60.0)
    assert np.allclose(np.sum(responses**2, axis=0), 1.0)
    late = SINC_HALF_TAPS + int(0.01 * RATE)  # well after the direct sound and its sinc
    tails = responses[late:]
    direct = responses[:late]
    # the diagonal pair is 91 mm apart: its diffuse tails are nearly independent, while
    # the direct paths are one impulse seen twice
    tail_corr = np.corrcoef(tails[:, 0], tails[:, 2])[0, 1]
    lag = round((geometry.delays_s(60.0)[2] - geometry.delays_s(60.0)[0]) * RATE)
    direct_corr = np.corrcoef(np.roll(direct[:, 2], -lag), direct[:, 0])[0, 1]
    assert abs(tail_corr) < 0.3
    assert direct_corr > 0.8
    # direct-to-reverberant ratio as configured (the tail's onset ramp aside)
    head = np.sum(responses[: 2 * SINC_HALF_TAPS + 1] ** 2, axis=0)
    drr = 10 * np.log10(head / (1.0 - head))
    assert np.all(np.abs(drr - 3.0) < 1.0)


def test_talker_tails_depend_on_the_talkers_place_not_on_the_order_of_scheduling() -> None:
    geometry = parse_geometry("respeaker-4mic")
    first = _acoustics(geometry, 0.2, 0.0)
    second = _acoustics(geometry, 0.2, 0.0)
    a = first.talker_responses(20.0)
    first.talker_responses(300.0)
    second.talker_responses(300.0)
    assert np.array_equal(a, second.talker_responses(20.0))
    assert not np.allclose(a[SINC_HALF_TAPS + 100 :], first.talker_responses(300.0)[SINC_HALF_TAPS + 100 :])


def test_without_a_geometry_the_room_is_the_single_mic_room_byte_for_byte(tmp_path: Path) -> None:
    played = _noise(1.0)
    talker = _noise(0.5, 2000, seed=3)
    outputs = []
    for folder, extra in (("plain", {}),
                          ("none", {"geometry": None, "talker_azimuth_deg": 123.0,
                                    "speaker_position_m": (0.1, 0.1, 0.0), "talker_drr_db": -5.0})):
        room = SimulatedRoom(PERIOD, speed=0, seed=5, rt60_s=0.2, noise_dbfs=-50,
                             record_dir=tmp_path / folder, **extra)  # type: ignore[arg-type]
        if extra:
            room.add_talker(talker, start_s=0.3, gain_db=-3, azimuth_deg=250.0)
        else:
            room.add_talker(talker, start_s=0.3, gain_db=-3)
        room.open()
        chunks = []
        for k in range(100):
            captured = room.read()
            assert captured.mics is None
            chunks.append(captured.mic)
            room.write(played[k * PERIOD : (k + 1) * PERIOD])
        room.close()
        assert "mics" not in room.recording_paths()
        outputs.append((np.concatenate(chunks).tobytes(), (tmp_path / folder / "mic.wav").read_bytes()))
    assert outputs[0] == outputs[1]
