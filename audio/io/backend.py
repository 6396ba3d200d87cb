"""The one interface every duplex audio backend implements.

A backend is a capture device and a playback device driven on one clock: the
duplex loop (:mod:`edgevoice.audio.io.duplex`) calls :meth:`AudioBackend.read` and
then :meth:`AudioBackend.write` once per period, from its own real-time thread.
Everything crossing this interface is 16 kHz mono int16; a backend converts
channels, formats and rates at its own edge.

Implementations: ALSA (:mod:`.alsa`), the simulated room (:mod:`.room`) and WAV
files (:mod:`.wav_backend`). Test fakes subclass this class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from edgevoice.audio.frames import MicPeriods, Pcm


@dataclass(frozen=True, slots=True)
class Captured:
    """One captured period: the microphone mix and, where the hardware has a
    loopback channel, the speaker signal as the hardware saw it."""

    mic: Pcm
    loopback: Pcm | None = None
    # The stream was interrupted just before this period (an xrun the device recovered
    # from): the alignment of capture and playback may have moved.
    discontinuity: bool = False
    # With a microphone array: every mic's period, (period_samples, mics) in the order of
    # the configured mic channels (int16 where the capture is 16 kHz S16, as the device
    # gave it; float32 at int16 scale otherwise). ``mic`` is then their average.
    mics: MicPeriods | None = None


@dataclass(slots=True)
class BackendStats:
    """Counters a backend keeps; the duplex loop reports them in events and telemetry."""

    overruns: int = 0
    underruns: int = 0
    reopened: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class AudioBackend(ABC):
    """A duplex audio device at 16 kHz mono, one fixed period at a time."""

    def __init__(self, period_samples: int) -> None:
        self.period_samples = period_samples
        self.stats = BackendStats()

    @property
    def name(self) -> str:
        """Short description for logs and events, e.g. ``alsa:hw:1,0``."""
        return type(self).__name__

    @property
    def paced(self) -> bool:
        """True when :meth:`read` blocks at the device's real-time rate."""
        return True

    @abstractmethod
    def open(self) -> None:
        """Open both directions. Raises ``DeviceNotFoundError`` or ``AudioDeviceError``."""

    @abstractmethod
    def read(self) -> Captured:
        """Block for one period of capture. Raises ``DeviceLostError`` when the device
        is gone and ``EndOfInput`` when a finite source is exhausted."""

    def read_raw(self) -> Captured | bytes:
        """:meth:`read`, except that a backend whose capture already is 16 kHz mono S16
        with no loopback channel may return the period's bytes as the device gave them.
        The duplex loop then makes the array on its consumer's thread, where a burst of
        periods runs on warm caches, instead of on the audio thread right after each
        wake-up. The default is :meth:`read`."""
        return self.read()

    def playback_wanted(self) -> int:
        """How many speaker periods the loop should take and :meth:`write` in this
        iteration. A backend whose own thread plays from a queue (:mod:`.rtloop`) asks for
        what fills that queue (0 while it is full) and returns the period it played with
        each capture as ``Captured.loopback``. The default: one, always."""
        return 1

    def discard_playback(self) -> int:
        """Discard periods written but queued ahead of the device (a backend with its own
        playback queue, :mod:`.rtloop`); returns the samples discarded. Default: none."""
        return 0

    @abstractmethod
    def write(self, pcm: Pcm) -> None:
        """Queue one period (``period_samples`` samples) for playback."""

    def output_latency_samples(self) -> int:
        """Samples written but not yet heard (in the device's buffer), at 16 kHz.

        The speaker's play cursor subtracts this from what was written, so "what the
        user heard" is what left the loudspeaker, not what was handed to the driver.
        """
        return 0

    @abstractmethod
    def close(self) -> None:
        """Close both directions; safe to call twice."""

    def __enter__(self) -> AudioBackend:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
