"""Beamforming: delay-and-sum's response is the textbook one, MVDR nulls an interferer and
keeps the target whole, the STFT reconstructs exactly."""

from __future__ import annotations

import numpy as np
import pytest
from support.array_scenes import noise_burst, plane_wave, room

from edgevoice.audio.array.beamformer import Beamformer
from edgevoice.audio.array.frontend import ArrayFrontEnd, ArraySettings
from edgevoice.audio.array.geometry import parse_geometry
from edgevoice.audio.array.stft import StreamingIstft, StreamingStft, frames_of


@pytest.mark.parametrize("overlap", [2, 4])
def test_the_stft_reconstructs_its_input_exactly(overlap: int) -> None:
    signal = np.random.default_rng(0).standard_normal((8000, 2))
    stft, istft = StreamingStft(160, 2, overlap), StreamingIstft(160, overlap)
    out = np.concatenate([istft.synthesise(stft.analyse(frame)[:, 0]) for frame in frames_of(signal, 160)])
    late = (overlap - 1) * 160
    assert np.max(np.abs(out[late + 640 :] - signal[640 : len(out) - late, 0])) < 1e-9


@pytest.mark.parametrize("frequency", [500.0, 1500.0, 3000.0])
@pytest.mark.parametrize("look", [0.0, 100.0])
def test_delay_and_sum_response_matches_theory(look: float, frequency: float) -> None:
    geometry = parse_geometry("respeaker-4mic")
    beam = Beamformer(geometry, mode="delay-and-sum")
    beam.steer(look)
    bins = np.fft.rfftfreq(320, 1 / 16000)
    bin_frequency = bins[int(np.argmin(np.abs(bins - frequency)))]
    for azimuth in range(0, 360, 15):
        # |sum_i exp(-j 2 pi f (d_i(theta) - d_i(look)))| / N for a plane wave from theta
        offsets = geometry.delays_s(azimuth) - geometry.delays_s(look)
        expected = abs(np.mean(np.exp(-2j * np.pi * bin_frequency * offsets)))
        assert abs(beam.response(float(azimuth), frequency)) == pytest.approx(expected, abs=1e-9)
    assert abs(beam.response(look, frequency)) == pytest.approx(1.0)


def _train(beam: Beamformer, signals: np.ndarray) -> None:
    stft = StreamingStft(160, beam.geometry.mic_count)
    for frame in frames_of(signals, 160):
        beam.learn_noise(stft.analyse(frame))


def test_mvdr_nulls_a_point_interferer_and_passes_the_look_direction_whole() -> None:
    geometry = parse_geometry("respeaker-4mic")
    beam = Beamformer(geometry, mode="mvdr", diagonal_loading=0.01)
    beam.steer(40.0)
    sensor_noise = np.random.default_rng(5).standard_normal((32000, 4)) * 30.0
    _train(beam, plane_wave(noise_burst(2.0, seed=1), geometry, 220.0) + sensor_noise)
    assert abs(beam.response(40.0, 2000.0)) == pytest.approx(1.0, abs=1e-6)  # distortionless
    assert 20 * np.log10(abs(beam.response(220.0, 2000.0))) < -20.0  # a deep null at the TV
    ds = Beamformer(geometry, mode="delay-and-sum")
    ds.steer(40.0)
    assert abs(beam.response(220.0, 2000.0)) < abs(ds.response(220.0, 2000.0)) / 10


def _direct_power(signals: np.ndarray, front: ArrayFrontEnd, weights_trace: list[np.ndarray]) -> float:
    stft = StreamingStft(160, front.geometry.mic_count, front.settings.overlap)
    istft = StreamingIstft(160, front.settings.overlap)
    out = np.concatenate(
        [
            istft.synthesise(front.beamformer.apply(stft.analyse(frame), weights))
            for frame, weights in zip(frames_of(signals, 160), weights_trace, strict=True)
        ]
    )
    return float(np.mean(out[16000:] ** 2))


def test_mvdr_does_not_cancel_the_talker_in_a_reverberant_room() -> None:
    geometry = parse_geometry("respeaker-4mic")
    seconds = 4.0
    tv = noise_burst(seconds, seed=21, level=3000.0)
    talker = np.zeros(int(seconds * 16000))
    talker[24000:] = noise_burst(seconds - 1.5, seed=22, level=3000.0)
    tv_heard = room(geometry, [(250.0, 2.0, tv)], rt60_s=0.5)
    talker_heard = room(geometry, [(60.0, 1.2, talker)], rt60_s=0.5)
    results = {}
    for mode in ("delay-and-sum", "mvdr"):
        front = ArrayFrontEnd(geometry, ArraySettings(beam=mode))  # type: ignore[arg-type]
        trace = []
        for index, frame in enumerate(frames_of(tv_heard + talker_heard, 160)):
            front.process(frame, speech=index * 160 >= 24000)
            trace.append(front.last_weights)
        results[mode] = (_direct_power(talker_heard, front, trace), _direct_power(tv_heard, front, trace))
    talker_loss_db = 10 * np.log10(results["mvdr"][0] / results["delay-and-sum"][0])
    sir_gain_db = 10 * np.log10(results["mvdr"][0] / results["mvdr"][1]) - 10 * np.log10(
        results["delay-and-sum"][0] / results["delay-and-sum"][1]
    )
    # whole-response talker power falls a little as MVDR also removes the talker's own
    # reverberation; the talker itself must not be cancelled, and the TV must be
    assert talker_loss_db > -3.0
    assert sir_gain_db > 3.0
