"""Direction of arrival: exact on plane waves, within a few degrees in rooms, and not fooled
by a TV that was already playing."""

from __future__ import annotations

import numpy as np
import pytest
from support.array_scenes import noise_burst, plane_wave, room

from edgevoice.audio.array.doa import SrpPhat, angle_difference_deg
from edgevoice.audio.array.frontend import ArrayFrontEnd, ArraySettings
from edgevoice.audio.array.geometry import parse_geometry
from edgevoice.audio.array.stft import StreamingStft, frames_of


def _srp_direction(geometry_name: str, signals: np.ndarray) -> float:
    geometry = parse_geometry(geometry_name)
    srp = SrpPhat(geometry)
    stft = StreamingStft(160, geometry.mic_count)
    total = None
    for frame in frames_of(signals, 160):
        cross = srp.cross_spectra(stft.analyse(frame))
        total = cross if total is None else total + cross
    assert total is not None
    return srp.direction(total)[0]


@pytest.mark.parametrize("azimuth", [0.0, 45.0, 123.0, 200.0, 290.0, 359.0])
@pytest.mark.parametrize("geometry", ["respeaker-4mic", "respeaker-6mic-circular"])
def test_plane_waves_are_found_within_the_grid(geometry: str, azimuth: float) -> None:
    signals = plane_wave(noise_burst(0.5, seed=int(azimuth)), parse_geometry(geometry), azimuth)
    assert angle_difference_deg(_srp_direction(geometry, signals), azimuth) <= 3.0


@pytest.mark.parametrize("azimuth", [30.0, 60.0, 120.0, 150.0])
def test_a_linear_array_reports_the_front_half_plane(azimuth: float) -> None:
    # a line of mics cannot tell +y from -y: the mirror image is the same answer (and near
    # its axis, where the delay barely changes with angle, it resolves coarsely)
    geometry = parse_geometry("linear-4-45mm")
    found = _srp_direction("linear-4-45mm", plane_wave(noise_burst(0.5, seed=3), geometry, -azimuth))
    assert 0.0 <= found <= 180.0
    assert angle_difference_deg(found, azimuth) <= 3.0


@pytest.mark.parametrize("azimuth", [30.0, 150.0, 250.0])
def test_talkers_in_a_reverberant_room_are_found_within_ten_degrees(azimuth: float) -> None:
    geometry = parse_geometry("respeaker-4mic")
    signals = room(geometry, [(azimuth, 1.5, noise_burst(1.0, seed=7))], rt60_s=0.4)
    assert angle_difference_deg(_srp_direction("respeaker-4mic", signals), azimuth) <= 10.0


def test_the_segment_direction_is_the_talker_not_the_tv_that_was_already_on() -> None:
    geometry = parse_geometry("respeaker-4mic")
    seconds = 3.0
    tv = noise_burst(seconds, seed=11, level=2500.0)
    talker = np.zeros(int(seconds * 16000))
    talker[16000:40000] = noise_burst(1.5, seed=12, level=3000.0)
    signals = room(geometry, [(300.0, 2.0, tv), (80.0, 1.2, talker)], rt60_s=0.3)
    front = ArrayFrontEnd(geometry, ArraySettings())
    for index, frame in enumerate(frames_of(signals, 160)):
        front.process(frame, speech=16000 <= index * 160 < 40000)
    assert front.last_segment is not None
    assert angle_difference_deg(front.last_segment.direction_deg, 80.0) <= 10.0
    assert front.smoothed_deg is not None
    assert angle_difference_deg(front.steered_deg, 80.0) <= 10.0
