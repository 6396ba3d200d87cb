"""The passthrough engine: no echo cancellation. Barge-in runs in its safe mode."""

from __future__ import annotations

from edgevoice.audio.aec.base import AecStats, EchoCanceller, check_period
from edgevoice.audio.frames import Pcm


class PassthroughCanceller(EchoCanceller):
    """Returns the microphone unchanged; ``stats.reference_ok`` is always False."""

    name = "none"

    def __init__(self) -> None:
        self._periods = 0

    def process(self, mic: Pcm, reference: Pcm) -> Pcm:
        check_period(mic, reference)
        self._periods += 1
        return mic.copy()

    def reset(self) -> None:
        self._periods = 0

    @property
    def stats(self) -> AecStats:
        return AecStats(self.name, periods=self._periods)
