"""Array geometry: presets, parsing, the channel check and the delay model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edgevoice.audio.array.geometry import PRESETS, SPEED_OF_SOUND_M_S, GeometryError, parse_geometry


@pytest.mark.parametrize(
    ("name", "mics"),
    [("respeaker-2mic", 2), ("respeaker-4mic", 4), ("respeaker-6mic-circular", 6), ("linear-4-45mm", 4)],
)
def test_presets_have_their_mic_count(name: str, mics: int) -> None:
    assert parse_geometry(name).mic_count == mics


def test_a_json_list_is_a_geometry_in_channel_order() -> None:
    geometry = parse_geometry(json.dumps([[0.03, 0, 0], [-0.03, 0, 0], [0, 0.03]]))
    assert geometry.mic_count == 3
    assert geometry.positions[2] == (0.0, 0.03, 0.0)


@pytest.mark.parametrize(
    "bad",
    [
        "respeaker-9mic",
        "[[0, 0, 0]]",
        "[[0,0,0],[3,0,0]]",
        "[1, 2]",
        '[[0,0],[0.1,"x"]]',
        "[[0,0,0],[0,0,0]]",
    ],
)
def test_bad_geometries_say_what_to_give(bad: str) -> None:
    with pytest.raises(GeometryError) as caught:
        parse_geometry(bad)
    assert caught.value.code == "array_geometry"


def test_the_channel_count_must_match() -> None:
    geometry = parse_geometry("respeaker-4mic")
    geometry.check_channels(4)
    with pytest.raises(GeometryError, match="mic_channels"):
        geometry.check_channels(6)


def test_a_mic_nearer_the_source_hears_it_first() -> None:
    geometry = parse_geometry("linear-2-70mm")  # mics at x = -35 mm and +35 mm
    delays = geometry.delays_s(0.0)  # a source far along +x
    assert delays[1] < 0 < delays[0]
    assert delays[0] - delays[1] == pytest.approx(0.070 / SPEED_OF_SOUND_M_S)
    broadside = geometry.delays_s(90.0)
    assert np.allclose(broadside, 0.0)


def test_linear_arrays_know_they_are_linear() -> None:
    assert parse_geometry("linear-4-45mm").is_linear
    assert not parse_geometry("respeaker-4mic").is_linear
    assert set(PRESETS) >= {"respeaker-2mic", "respeaker-4mic", "respeaker-6mic-circular", "linear-4-45mm"}
