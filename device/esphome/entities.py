"""The entities the device shows over the native API, and their states.

- a media player: the speaker's volume (0-1, what HA shows as a percentage) and its
  mute, ``announcing`` while the device speaks; HA plays media and announcements on it;
- a switch: the microphone mute;
- sensors: the echo canceller's echo reduction (dB) and the last turn's voice-to-voice
  latency (ms), with ``missing_state`` until there is a figure.

Keys are stable hashes of the object ids (what ESPHome does too), so HA keeps its
entities across restarts. This module is pure: it builds messages from a
:class:`DeviceView` and turns commands into :class:`Command` values.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from enum import StrEnum

from google.protobuf.message import Message

from edgevoice.device.esphome.messages import make, pb


def entity_key(object_id: str) -> int:
    return zlib.crc32(object_id.encode()) & 0xFFFFFFFF


MEDIA_PLAYER = "speaker"
MIC_MUTE = "mute"
ECHO_REDUCTION = "echo_reduction"
LATENCY = "voice_to_voice_latency"
KEYS = {name: entity_key(name) for name in (MEDIA_PLAYER, MIC_MUTE, ECHO_REDUCTION, LATENCY)}

# HA's MediaPlayerEntityFeature bits: PAUSE 1, VOLUME_SET 4, VOLUME_MUTE 8, PLAY_MEDIA 512,
# STOP 4096, PLAY 16384, MEDIA_ANNOUNCE 1048576.
MEDIA_FEATURES = 4 | 8 | 512 | 4096 | 1048576


@dataclass(frozen=True, slots=True)
class DeviceView:
    """What the entities show, read from the device when a state is sent."""

    volume: float
    speaker_muted: bool
    mic_muted: bool
    speaking: bool
    echo_reduction_db: float | None
    latency_ms: float | None


class CommandKind(StrEnum):
    VOLUME = "volume"
    SPEAKER_MUTE = "speaker_mute"
    MIC_MUTE = "mic_mute"
    PLAY_URL = "play_url"
    STOP = "stop"


@dataclass(frozen=True, slots=True)
class Command:
    kind: CommandKind
    value: float | bool | str
    announcement: bool = False


def list_entities() -> list[Message]:
    """The ListEntities answers (HA names them after the device; the names are the suffix)."""
    return [
        make("ListEntitiesMediaPlayerResponse", object_id=MEDIA_PLAYER, key=KEYS[MEDIA_PLAYER],
             name="Speaker", unique_id=f"{MEDIA_PLAYER}", supports_pause=False,
             feature_flags=MEDIA_FEATURES),
        make("ListEntitiesSwitchResponse", object_id=MIC_MUTE, key=KEYS[MIC_MUTE], name="Mute",
             unique_id=MIC_MUTE, icon="mdi:microphone-off", entity_category=1),
        make("ListEntitiesSensorResponse", object_id=ECHO_REDUCTION, key=KEYS[ECHO_REDUCTION],
             name="Echo reduction", unique_id=ECHO_REDUCTION, icon="mdi:waveform",
             unit_of_measurement="dB", accuracy_decimals=1, state_class=1, entity_category=2),
        make("ListEntitiesSensorResponse", object_id=LATENCY, key=KEYS[LATENCY],
             name="Voice-to-voice latency", unique_id=LATENCY, icon="mdi:timer-outline",
             unit_of_measurement="ms", accuracy_decimals=0, device_class="duration", state_class=1,
             entity_category=2),
    ]


def states(view: DeviceView) -> list[Message]:
    """The state answers for every entity."""
    player_state = 4 if view.speaking else 1  # MEDIA_PLAYER_STATE_ANNOUNCING / _IDLE
    return [
        make("MediaPlayerStateResponse", key=KEYS[MEDIA_PLAYER], state=player_state,
             volume=float(view.volume), muted=view.speaker_muted),
        make("SwitchStateResponse", key=KEYS[MIC_MUTE], state=view.mic_muted),
        _sensor(ECHO_REDUCTION, view.echo_reduction_db),
        _sensor(LATENCY, view.latency_ms),
    ]


def _sensor(name: str, value: float | None) -> Message:
    if value is None:
        return make("SensorStateResponse", key=KEYS[name], state=0.0, missing_state=True)
    return make("SensorStateResponse", key=KEYS[name], state=float(value), missing_state=False)


def command_of(message: Message) -> list[Command]:
    """The commands an entity request carries (none for a key that is not ours)."""
    if isinstance(message, pb("SwitchCommandRequest")):
        if message.key == KEYS[MIC_MUTE]:  # type: ignore[attr-defined]
            return [Command(CommandKind.MIC_MUTE, bool(message.state))]  # type: ignore[attr-defined]
        return []
    if not isinstance(message, pb("MediaPlayerCommandRequest")) or message.key != KEYS[MEDIA_PLAYER]:  # type: ignore[attr-defined]
        return []
    found: list[Command] = []
    m = message
    if m.has_volume:  # type: ignore[attr-defined]
        found.append(Command(CommandKind.VOLUME, min(1.0, max(0.0, float(m.volume)))))  # type: ignore[attr-defined]
    if m.has_command:  # type: ignore[attr-defined]
        command = int(m.command)  # type: ignore[attr-defined]
        if command == 3:
            found.append(Command(CommandKind.SPEAKER_MUTE, True))
        elif command == 4:
            found.append(Command(CommandKind.SPEAKER_MUTE, False))
        elif command in (1, 2):  # pause, stop: the device stops what it plays
            found.append(Command(CommandKind.STOP, True))
    if m.has_media_url and m.media_url:  # type: ignore[attr-defined]
        announce = bool(getattr(m, "has_announcement", False) and m.announcement)  # type: ignore[attr-defined]
        found.append(Command(CommandKind.PLAY_URL, str(m.media_url), announcement=announce))  # type: ignore[attr-defined]
    return found


__all__ = ["KEYS", "Command", "CommandKind", "DeviceView", "command_of", "entity_key", "list_entities",
           "states"]
