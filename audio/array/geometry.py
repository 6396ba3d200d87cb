"""Array geometry: where each microphone sits, in metres, in capture channel order.

Coordinates are in the array's own frame: +x is the array's "front" (azimuth 0°),
azimuths run counter-clockwise seen from above (+y is 90°), +z points up out of the
board. Presets give the common boards; a JSON list of ``[x, y, z]`` positions names any
other. The presets' spacings are the boards' published dimensions, rounded to the
millimetre: measure yours and pass positions when you need better than a few degrees.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgevoice.audio.errors import AudioError

SPEED_OF_SOUND_M_S = 343.0

Position = tuple[float, float, float]


class GeometryError(AudioError, ValueError):
    """A geometry that cannot be used: unknown preset, bad positions, wrong channel count."""

    code = "array_geometry"


def _circle(count: int, radius_m: float, first_deg: float = 0.0) -> tuple[Position, ...]:
    return tuple(
        (
            round(radius_m * math.cos(math.radians(first_deg + 360.0 * k / count)), 6),
            round(radius_m * math.sin(math.radians(first_deg + 360.0 * k / count)), 6),
            0.0,
        )
        for k in range(count)
    )


def _line(count: int, spacing_m: float) -> tuple[Position, ...]:
    offset = (count - 1) * spacing_m / 2.0
    return tuple((round(k * spacing_m - offset, 6), 0.0, 0.0) for k in range(count))


PRESETS: dict[str, tuple[Position, ...]] = {
    # ReSpeaker 2-Mics Pi HAT (WM8960): two mics on the board's long axis, ~58 mm apart.
    "respeaker-2mic": _line(2, 0.058),
    # ReSpeaker 4-Mic Array for Raspberry Pi (AC108): a square, ~64.6 mm sides (45.7 mm
    # from the centre), channel 0 on +x and the rest counter-clockwise.
    "respeaker-4mic": _circle(4, 0.0457),
    # ReSpeaker USB Mic Array v2.0 (XVF-3000): four mics 32 mm from the centre (its
    # raw-mic channels 1-4 of the 6-channel firmware).
    "respeaker-usb-v2": _circle(4, 0.032),
    # ReSpeaker 6-Mic Circular Array kit: six mics on a 46.3 mm radius.
    "respeaker-6mic-circular": _circle(6, 0.0463),
    # A generic linear array: four mics 45 mm apart.
    "linear-4-45mm": _line(4, 0.045),
    # A generic linear pair, 70 mm apart (two USB mics on a bar).
    "linear-2-70mm": _line(2, 0.070),
}


@dataclass(frozen=True, slots=True)
class ArrayGeometry:
    """Microphone positions in metres, one per capture channel used, in channel order."""

    positions: tuple[Position, ...]
    name: str = "custom"

    def __post_init__(self) -> None:
        if len(self.positions) < 2:
            raise GeometryError(
                f"array geometry {self.name!r} has {len(self.positions)} microphone(s); "
                "direction and beamforming need at least 2"
            )
        points = np.asarray(self.positions, dtype=np.float64)
        if points.shape != (len(self.positions), 3) or not np.all(np.isfinite(points)):
            raise GeometryError(f"array geometry {self.name!r}: every position must be [x, y, z] in metres")
        spread = float(np.max(np.linalg.norm(points[:, None, :] - points[None, :, :], axis=-1)))
        if spread < 0.005 or spread > 1.0:
            raise GeometryError(
                f"array geometry {self.name!r}: microphones span {spread * 1000:.1f} mm; "
                "positions are in metres (expected 5 mm to 1 m)"
            )

    @property
    def mic_count(self) -> int:
        return len(self.positions)

    def centred(self) -> npt.NDArray[np.float64]:
        """Positions (N, 3) relative to the array's centroid."""
        points = np.asarray(self.positions, dtype=np.float64)
        centred: npt.NDArray[np.float64] = points - points.mean(axis=0)
        return centred

    @property
    def aperture_m(self) -> float:
        points = self.centred()
        return float(np.max(np.linalg.norm(points[:, None, :] - points[None, :, :], axis=-1)))

    @property
    def is_linear(self) -> bool:
        """All mics on one line: azimuth is then only known up to a front/back mirror."""
        points = self.centred()
        return bool(np.linalg.matrix_rank(points, tol=1e-4) <= 1)

    def delays_s(self, azimuth_deg: float | npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Far-field arrival time of each mic relative to the centre, for a source in the
        array's plane at ``azimuth_deg``: negative for mics nearer the source.
        Shape (..., N) for an array of azimuths."""
        angle = np.radians(np.asarray(azimuth_deg, dtype=np.float64))
        direction = np.stack([np.cos(angle), np.sin(angle), np.zeros_like(angle)], axis=-1)
        delays: npt.NDArray[np.float64] = -(direction @ self.centred().T) / SPEED_OF_SOUND_M_S
        return delays

    def check_channels(self, channels: int) -> None:
        """Raise unless the capture gives exactly one channel per microphone."""
        if channels != self.mic_count:
            raise GeometryError(
                f"array geometry {self.name!r} has {self.mic_count} microphones but {channels} "
                f"microphone channel(s) are configured; set [audio] mic_channels to {self.mic_count} "
                "channels in the geometry's order, or give the geometry for the channels you capture"
            )


def parse_geometry(spec: str | Sequence[Sequence[float]]) -> ArrayGeometry:
    """A preset name, a JSON list of ``[x, y, z]`` positions, or such a list itself."""
    if isinstance(spec, str):
        text = spec.strip()
        if text in PRESETS:
            return ArrayGeometry(PRESETS[text], name=text)
        if not text.startswith("["):
            raise GeometryError(
                f"unknown array geometry {spec!r}; use a preset "
                f"({', '.join(sorted(PRESETS))}) or a JSON list of [x, y, z] positions in metres"
            )
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as err:
            raise GeometryError(f"array geometry is not valid JSON: {err}") from err
    try:
        positions = tuple(_position(item) for item in spec)
    except (TypeError, ValueError) as err:
        raise GeometryError(f"array geometry: {err}; give [[x, y, z], ...] in metres") from err
    return ArrayGeometry(positions)


def _position(item: object) -> Position:
    if not isinstance(item, list | tuple) or len(item) not in (2, 3):
        raise ValueError(f"{item!r} is not an [x, y, z] position")
    values = [float(v) for v in item]
    if len(values) == 2:
        values.append(0.0)
    return (values[0], values[1], values[2])
