"""Build the duplex audio backend the configuration names.

API::

    backend = open_backend(config.audio, config.room, config.wav)   # not yet opened
    speaker = Speaker(backend.period_samples, config.audio.volume)
    duplex = DuplexLoop(backend, speaker, **duplex_options(config.audio))

``[audio] backend`` picks ALSA (``[audio]`` keys), the simulated room (``[room]``) or
WAV files (``[wav]``). Only plain parameters go down into :mod:`edgevoice.audio`.
The backend is returned closed: ``DuplexLoop.start`` opens it (a wrong device name
raises ``DeviceNotFoundError`` there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgevoice.audio.frames import period_samples
from edgevoice.audio.io.backend import AudioBackend
from edgevoice.device.config.loader import ConfigError, ConfigProblem
from edgevoice.device.config.schema import ArrayConfig, AudioConfig, RoomConfig, WavConfig


def open_backend(audio: AudioConfig, room: RoomConfig, wav: WavConfig,
                 array: ArrayConfig | None = None) -> AudioBackend:
    """The configured backend (closed), with a 16 kHz period of ``audio.period_ms``. With
    ``[array] geometry`` it gives every mic (``Captured.mics``), and the simulated room
    simulates that array."""
    period = period_samples(audio.period_ms)
    with_array = array is not None and array.enabled
    if audio.backend == "alsa":
        from edgevoice.audio.io.rtloop import open_alsa_backend

        return open_alsa_backend(
            period,
            loop=audio.loop,
            rt_priority=audio.rt_priority,
            capture_device=audio.capture_device,
            playback_device=audio.playback_device,
            capture_channels=audio.capture_channels,
            capture_rate=audio.capture_rate,
            capture_format=audio.capture_format,
            mic_channels=audio.mic_channels,
            reference_channel=audio.reference_channel,
            playback_rate=audio.playback_rate,
            playback_channels=audio.playback_channels,
            buffer_periods=audio.buffer_periods,
            keep_mics=with_array,
        )
    if audio.backend == "simulated":
        return open_room(room, period, array if with_array else None)
    if audio.backend == "wav":
        from edgevoice.audio.io.wav_backend import WavFileBackend

        return WavFileBackend(period, input_path=wav.input or None, output_path=wav.output or None,
                              realtime=wav.realtime, at_end=wav.at_end)
    raise ConfigError([ConfigProblem("config", "audio.backend",
                                     f"expected alsa, simulated or wav, found {audio.backend!r}")])


def open_room(room: RoomConfig, period: int, array: ArrayConfig | None = None) -> AudioBackend:
    """The simulated room from the ``[room]`` section, with its scripted talkers added
    (heard by ``array``'s geometry when given)."""
    from edgevoice.audio.io.room import SimulatedRoom

    simulated = SimulatedRoom(
        period,
        **room_array_options(room, array),
        speed=room.speed,
        echo_gain_db=room.echo_gain_db,
        echo_delay_ms=room.echo_delay_ms,
        impulse_response=room.impulse_response or None,
        rt60_s=room.rt60_s,
        noise_dbfs=room.noise_dbfs,
        seed=room.seed,
        record_dir=room.record_dir or None,
        duration_s=room.duration_s or None,
    )
    for path, start_s, gain_db in parse_talkers(room.talkers):
        simulated.add_talker(path, start_s=start_s, gain_db=gain_db)
    return simulated


def room_array_options(room: RoomConfig, array: ArrayConfig | None) -> dict[str, Any]:
    """The simulated room's array keywords: the geometry and where the talkers stand."""
    if array is None or not array.enabled:
        return {}
    from edgevoice.audio.array.geometry import parse_geometry

    return {"geometry": parse_geometry(array.geometry), "talker_azimuth_deg": room.talker_deg % 360.0}


def parse_talkers(entries: tuple[str, ...]) -> list[tuple[Path, float, float]]:
    """``'file.wav@start_s[@gain_db]'`` entries → ``(path, start_s, gain_db)``."""
    talkers = []
    for entry in entries:
        parsed = _parse_talker(entry)
        if parsed is None:
            raise ConfigError([ConfigProblem(
                "config", "room.talkers",
                f"expected 'file.wav@start_s' or 'file.wav@start_s@gain_db', found {entry!r}")
            ])
        talkers.append(parsed)
    return talkers


def _parse_talker(entry: str) -> tuple[Path, float, float] | None:
    for fields in (3, 2):  # with a gain first, then without (a path may contain '@')
        parts = entry.rsplit("@", fields - 1)
        if len(parts) != fields or not parts[0]:
            continue
        try:
            numbers = [float(part) for part in parts[1:]]
        except ValueError:
            continue
        return Path(parts[0]).expanduser(), numbers[0], numbers[1] if fields == 3 else 0.0
    return None


def duplex_options(audio: AudioConfig) -> dict[str, Any]:
    """Keyword arguments for :class:`edgevoice.audio.io.duplex.DuplexLoop` from ``[audio]``."""
    return {"queue_periods": audio.queue_periods, "reconnect_max_s": audio.reconnect_max_s}
