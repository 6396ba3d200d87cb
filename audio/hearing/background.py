"""The room's background level, from the level of each window: pure, no clock, no I/O.

Barge-in asks whether someone talks over the device. Silero answers "speech" for any
speech: a television, a radio, a room of other people (babble), a car's tyres on a wet
street. What tells the person addressing the device from the room's own sound is level:
they stand out of the background, the background is the room's floor. The floor is the
minimum of the smoothed power over the last ``span_ms`` (the barge-in detector's: 1 s;
minimum statistics, as noise estimators take it): a person's pauses between phrases pull
it back down to the room, and a steady source (a fan, babble) is its own floor, however
speech-like it is.

The minimum is taken over sub-spans (``span_ms`` / ``blocks`` each), so it follows a
rising room within ``span_ms`` and costs a few comparisons a window.
"""

from __future__ import annotations

import math
from collections import deque


class BackgroundLevel:
    """Feed :meth:`push` the level (dBFS) of every window, in order, with its length;
    :attr:`dbfs` is the floor before the last window (None until ``smooth_ms`` has
    passed: a fresh stream has no floor yet)."""

    def __init__(self, *, smooth_ms: int = 250, span_ms: int = 2000, blocks: int = 8) -> None:
        if smooth_ms <= 0 or span_ms <= 0 or blocks <= 0:
            raise ValueError("smooth_ms, span_ms and blocks must be positive")
        self._smooth_ms = smooth_ms
        self._block_ms = max(1, span_ms // blocks)
        self._blocks: deque[float] = deque(maxlen=blocks)
        self.reset()

    def reset(self) -> None:
        self._power: float | None = None  # smoothed power (linear)
        self._elapsed = 0  # ms since the first window
        self._block_min = math.inf
        self._block_elapsed = 0
        self._blocks.clear()
        self._floor: float | None = None

    @property
    def dbfs(self) -> float | None:
        return self._floor

    def push(self, level_dbfs: float, duration_ms: int) -> None:
        power = 10.0 ** (max(level_dbfs, -140.0) / 10.0)
        if self._power is None:
            self._power = power
        else:
            # an exponential average with a time constant of smooth_ms
            self._power += min(1.0, duration_ms / self._smooth_ms) * (power - self._power)
        self._elapsed += duration_ms
        self._block_min = min(self._block_min, self._power)
        self._block_elapsed += duration_ms
        if self._block_elapsed >= self._block_ms:
            self._blocks.append(self._block_min)
            self._block_min = math.inf
            self._block_elapsed = 0
        if self._elapsed >= self._smooth_ms:
            lowest = min(min(self._blocks, default=math.inf), self._block_min)
            self._floor = 10.0 * math.log10(max(lowest, 1e-14))
