"""The microphone array: its geometry, the beam toward the talker and where the echo
canceller runs (docs/array.md)."""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.audio.array.geometry import GeometryError, parse_geometry
from edgevoice.device.config.fields import setting


@dataclass(frozen=True, slots=True)
class ArrayConfig:
    """A multi-mic array heard through a beam steered at the talker. Without a geometry
    the ``[audio] mic_channels`` are averaged to mono, as on a single-mic device."""

    geometry: str = setting(
        "",
        "Mic positions, one per [audio] mic_channels entry in that order: a preset "
        "(respeaker-2mic, respeaker-4mic, respeaker-usb-v2, respeaker-6mic-circular, "
        "linear-4-45mm, linear-2-70mm) or a JSON list of [x, y, z] in metres. Empty: no "
        "array (the mic channels are averaged).",
        restart=True,
    )
    beam: str = setting(
        "mvdr",
        "The beam: mvdr (adaptive, nulls a point interferer such as a TV) or delay-and-sum "
        "(fixed).",
        choices=("mvdr", "delay-and-sum"),
        restart=True,
    )
    follow_talker: bool = setting(
        True, "Steer the beam at each turn's talker (direction of arrival); false keeps it at "
        "front_deg.", restart=True,
    )
    front_deg: float = setting(
        0.0, "Where the beam points before anyone has spoken, and always when follow_talker "
        "is false: degrees counter-clockwise from the array's +x axis.",
        minimum=-360.0, maximum=360.0, restart=True,
    )
    post_filter: bool = setting(
        False, "A Wiener post-filter against the noise left at the beam's output (+SNR "
        "against diffuse noise, with the artefacts of any spectral gain).", restart=True,
    )
    echo_cancel: str = setting(
        "per-mic",
        "Where the echo canceller runs: per-mic (one canceller per mic before the beam: "
        "the beam never changes the echo path, N times the CPU) or after-beam (one "
        "canceller on the beam's output).",
        choices=("per-mic", "after-beam"),
        restart=True,
    )
    led_offset_deg: float = setting(
        0.0, "Azimuth of the LED ring's first LED in the array's frame (degrees, counter-"
        "clockwise; the LEDs are taken to run counter-clockwise too), so the listening ring "
        "points at the talker.",
        minimum=-360.0, maximum=360.0, restart=True,
    )

    @property
    def enabled(self) -> bool:
        return bool(self.geometry.strip())

    def problems(self) -> list[tuple[str, str]]:
        """Checks beyond a key's type and range: (key, what is wrong and what to do)."""
        if not self.enabled:
            return []
        try:
            parse_geometry(self.geometry)
        except GeometryError as err:
            return [("geometry", str(err))]
        return []
