"""The duplex audio device and its simulated and file backends."""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.config.fields import setting


@dataclass(frozen=True, slots=True)
class AudioConfig:
    """The duplex audio device: one capture period in, one playback period out, one clock."""

    backend: str = setting(
        "alsa",
        "Audio I/O backend: alsa (real devices), simulated (the simulated room) or wav (files).",
        choices=("alsa", "simulated", "wav"),
        restart=True,
    )
    capture_device: str = setting("default", "ALSA PCM to capture from.", restart=True)
    playback_device: str = setting("default", "ALSA PCM to play to.", restart=True)
    capture_channels: int = setting(
        1, "Channels the capture PCM is opened with.", minimum=1, maximum=32, restart=True
    )
    capture_rate: int = setting(
        16000,
        "Capture sample rate in Hz (the device's native rate; converted to 16 kHz at the edge).",
        choices=(8000, 16000, 22050, 24000, 32000, 44100, 48000),
        restart=True,
    )
    capture_format: str = setting(
        "S16_LE", "Capture sample format.", choices=("S16_LE", "S32_LE"), restart=True
    )
    mic_channels: tuple[int, ...] = setting(
        (0,),
        "Capture channel(s) that carry microphones; several are averaged to mono.",
        restart=True,
    )
    reference_channel: int = setting(
        -1,
        "Capture channel carrying a hardware loopback of the speaker, used as the echo "
        "reference instead of the written frames. -1: none (use the written frames).",
        minimum=-1,
        maximum=31,
        restart=True,
    )
    playback_rate: int = setting(
        16000,
        "Playback sample rate in Hz (converted from 16 kHz at the edge).",
        choices=(8000, 16000, 22050, 24000, 32000, 44100, 48000),
        restart=True,
    )
    playback_channels: int = setting(
        1, "Channels the playback PCM is opened with (mono is copied to each).",
        minimum=1, maximum=8, restart=True,
    )
    period_ms: int = setting(
        10, "Duplex period in milliseconds.", choices=(10, 20), restart=True
    )
    buffer_periods: int = setting(
        4, "Periods in the ALSA buffer (latency versus underrun safety).",
        minimum=2, maximum=32, restart=True,
    )
    queue_periods: int = setting(
        200, "Periods the audio thread may queue for the event loop before dropping.",
        minimum=10, maximum=10000, restart=True,
    )
    volume: float = setting(1.0, "Speaker volume, 0.0 to 1.0.", minimum=0.0, maximum=1.0)
    loop: str = setting(
        "auto",
        "Where the ALSA period loop runs: c (its own C thread on libasound, on time whatever "
        "Python does), python (pyalsaaudio on a Python thread) or auto (c where it is built).",
        choices=("auto", "c", "python"),
        restart=True,
    )
    rt_priority: int = setting(
        20, "SCHED_FIFO priority the C period loop's thread asks for (where the system allows "
        "it; the service grants LimitRTPRIO=20). 0: normal scheduling.",
        minimum=0, maximum=99, restart=True,
    )
    reconnect_max_s: float = setting(
        10.0, "Longest wait between attempts to reopen a lost audio device.",
        minimum=0.5, maximum=600.0, restart=True,
    )


@dataclass(frozen=True, slots=True)
class RoomConfig:
    """The simulated room (audio.backend = "simulated"): a virtual clock, an echo path,
    scripted talkers and noise. Used by tests, benchmarks and ``edgevoice demo``."""

    speed: float = setting(
        1.0, "Virtual clock speed: 1.0 is real time, 0 runs as fast as possible.",
        minimum=0.0, maximum=1000.0, restart=True,
    )
    echo_gain_db: float = setting(
        -6.0, "Level of the speaker's sound at the microphone, in dB.", minimum=-120.0, maximum=20.0,
        restart=True,
    )
    echo_delay_ms: float = setting(
        30.0, "Bulk delay of the echo path in milliseconds.", minimum=0.0, maximum=1000.0, restart=True
    )
    impulse_response: str = setting(
        "", "WAV file with the echo path's impulse response. Empty: a synthetic small room.", restart=True
    )
    rt60_s: float = setting(
        0.25, "Reverberation time of the synthetic room.", minimum=0.0, maximum=2.0, restart=True
    )
    noise_dbfs: float = setting(
        -70.0, "Level of the microphone's background noise (dBFS).", minimum=-150.0, maximum=0.0, restart=True
    )
    seed: int = setting(0, "Random seed: the same seed gives the same bytes.", restart=True)
    record_dir: str = setting(
        "", "Folder where mic, reference, speaker and near-end streams are written as WAV. "
        "Empty: none.", restart=True
    )
    talkers: tuple[str, ...] = setting(
        (),
        "Scripted near-end talkers, each 'file.wav@start_s' or 'file.wav@start_s@gain_db' "
        "(e.g. 'question.wav@2.0@-3').", restart=True,
    )
    talker_deg: float = setting(
        30.0, "With a microphone array ([array] geometry): the azimuth the room's talkers "
        "speak from, degrees counter-clockwise from the array's +x axis. Ignored with one mic.",
        minimum=-360.0, maximum=360.0, restart=True,
    )
    duration_s: float = setting(
        0.0, "Audio time after which the room's input ends. 0: never.", minimum=0.0, maximum=86400.0,
        restart=True,
    )


@dataclass(frozen=True, slots=True)
class WavConfig:
    """The WAV backend (audio.backend = "wav"): microphone from a file, speaker to a file."""

    input: str = setting("", "WAV file read as the microphone.", restart=True)
    output: str = setting("", "WAV file the speaker is written to. Empty: discard.", restart=True)
    realtime: bool = setting(False, "Pace reads at real time instead of as fast as possible.", restart=True)
    at_end: str = setting(
        "stop",
        "At the end of the input: stop (the audio input ends) or silence (keep going with silence).",
        choices=("stop", "silence"), restart=True,
    )
