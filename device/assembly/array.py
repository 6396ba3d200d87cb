"""Config → the microphone array's live stage: ``[array]`` read once, here.

    hearing = build_array_hearing(config)     # ArrayHearing, or None without a geometry

Only plain parameters go down into :mod:`edgevoice.audio.array`.
"""

from __future__ import annotations

from typing import cast

from edgevoice.audio.array.beamformer import BeamMode
from edgevoice.audio.array.frontend import ArraySettings
from edgevoice.audio.array.geometry import ArrayGeometry, parse_geometry
from edgevoice.audio.array.hearing import ArrayHearing, Placement
from edgevoice.device.assembly.echo import build_canceller
from edgevoice.device.config.schema import ArrayConfig, Config


def array_geometry(array: ArrayConfig) -> ArrayGeometry | None:
    """The configured geometry, or None when the device has no array."""
    return parse_geometry(array.geometry) if array.enabled else None


def array_settings(array: ArrayConfig) -> ArraySettings:
    return ArraySettings(
        beam=cast(BeamMode, array.beam),
        follow_talker=array.follow_talker,
        initial_azimuth_deg=array.front_deg % 360.0,
        post_filter=array.post_filter,
    )


def build_array_hearing(config: Config) -> ArrayHearing | None:
    """The array stage with its echo canceller(s), or None without ``[array] geometry``."""
    geometry = array_geometry(config.array)
    if geometry is None:
        return None
    geometry.check_channels(len(config.audio.mic_channels))
    placement = cast(Placement, config.array.echo_cancel)
    count = geometry.mic_count if placement == "per-mic" else 1
    cancellers = [build_canceller(config.aec) for _ in range(count)]
    return ArrayHearing(geometry, array_settings(config.array), cancellers, placement)
