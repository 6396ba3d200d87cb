"""``[array]``: a geometry that is not one, or that does not match the mic channels, is a
clear config error naming the key and what to do; a good one builds the live stage."""

from __future__ import annotations

import pytest

from edgevoice.device.assembly.array import build_array_hearing
from edgevoice.device.config.loader import ConfigError, load_config

FOUR_MICS = ["audio.capture_channels=4", "audio.mic_channels=[0,1,2,3]"]


def test_an_unknown_geometry_names_the_presets() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=['array.geometry="respeaker-5mic"', *FOUR_MICS], search_paths=[])
    (problem,) = caught.value.problems
    assert problem.key == "array.geometry" and problem.source == "--set"
    assert "respeaker-4mic" in problem.message and "JSON list" in problem.message


def test_a_geometry_must_match_the_mic_channels() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=['array.geometry="respeaker-6mic-circular"', *FOUR_MICS], search_paths=[])
    (problem,) = caught.value.problems
    assert problem.key == "array.geometry" and problem.source == "--set"
    assert "6 microphones" in problem.message and "names 4" in problem.message


def test_positions_in_metres_build_the_stage_with_a_canceller_per_mic() -> None:
    config = load_config(overrides=['array.geometry="[[0.03,0,0],[0,0.03,0],[-0.03,0,0],[0,-0.03,0]]"',
                                    *FOUR_MICS], search_paths=[]).config
    hearing = build_array_hearing(config)
    assert hearing is not None and hearing.geometry.mic_count == 4
    assert len(hearing.cancellers) == 4 and hearing.placement == "per-mic"
    after = load_config(overrides=['array.geometry="respeaker-4mic"', 'array.echo_cancel="after-beam"',
                                   *FOUR_MICS], search_paths=[]).config
    hearing = build_array_hearing(after)
    assert hearing is not None and len(hearing.cancellers) == 1


def test_without_a_geometry_there_is_no_array() -> None:
    assert build_array_hearing(load_config(overrides=FOUR_MICS, search_paths=[]).config) is None
