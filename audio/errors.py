"""Errors raised by audio devices and stages."""

from __future__ import annotations

from edgevoice.errors import EdgeVoiceError


class AudioError(EdgeVoiceError):
    code = "audio_error"


class AudioDeviceError(AudioError, OSError):
    """A capture or playback device failed to open or stopped working."""

    code = "audio_device"


class DeviceNotFoundError(AudioDeviceError):
    """The configured PCM does not exist; the message lists the ones that do."""

    code = "device_not_found"


class DeviceLostError(AudioDeviceError):
    """An open device went away (USB array unplugged); the duplex loop retries it."""

    code = "audio_device_lost"


class EndOfInput(AudioError, EOFError):
    """A finite source (a WAV file, a scripted room) has no more input."""

    code = "end_of_input"
