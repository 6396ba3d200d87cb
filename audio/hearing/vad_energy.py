"""A cheap energy VAD: level above an adaptive noise floor, mapped to a probability.

No model, ~0.1 ms CPU per second. It cannot tell speech from a door slam; use it
as a gate in front of Silero or where CPU is scarcer than accuracy.
"""

from __future__ import annotations

import math

from edgevoice.audio.frames import Pcm, dbfs
from edgevoice.audio.hearing.vad import VadEngine


class EnergyVad(VadEngine):
    """``probability`` is a logistic of (level − noise floor − ``margin_db``).

    The noise floor follows the level down at once and up slowly (``rise_db_per_s``),
    so steady noise is learnt and speech, which comes and goes, is not. Levels below
    ``min_dbfs`` never count as speech.
    """

    name = "energy"
    window_samples = 160

    def __init__(
        self,
        *,
        margin_db: float = 12.0,
        min_dbfs: float = -55.0,
        rise_db_per_s: float = 3.0,
        initial_floor_dbfs: float = -70.0,
    ) -> None:
        self.margin_db = margin_db
        self.min_dbfs = min_dbfs
        self.rise_per_window = rise_db_per_s * self.window_samples / 16000
        self.initial_floor = initial_floor_dbfs
        self.floor = initial_floor_dbfs

    def probability(self, window: Pcm) -> float:
        level = dbfs(window)
        if level < self.floor:
            self.floor = level
        else:
            self.floor = min(level, self.floor + self.rise_per_window)
        if level < self.min_dbfs:
            return 0.0
        excess = level - self.floor - self.margin_db
        return 1.0 / (1.0 + math.exp(-excess / 2.0))

    def reset(self) -> None:
        self.floor = self.initial_floor

    def another_stream(self) -> EnergyVad:
        other = EnergyVad(margin_db=self.margin_db, min_dbfs=self.min_dbfs,
                          initial_floor_dbfs=self.initial_floor)
        other.rise_per_window = self.rise_per_window
        return other
