"""Does the microphone hear the loudspeaker at all? Pure: fed energies, no clock, no I/O.

A canceller proves its reference by removing echo (ERLE); with no echo to remove it can
prove nothing, and barge-in stays in its safe mode (a higher threshold and longer speech)
for good. That is the right caution when the reference might be wrong, and the wrong one
when the microphone simply does not hear the loudspeaker: a handset or headset, an
intercom's remote speaker, a loudspeaker switched off. There the device's own voice cannot
interrupt it, and the safe mode only misses people (2-3 of 42 talk-overs per 10 minutes
in ``bench/realtime_conversation``, whose microphone hears no loudspeaker).

The test is conservative: while the far end plays alone (the suppressor hears no person),
the microphone's power must stay within ``margin_db`` of its own quietest level (its noise
floor, measured while nothing plays), over at least ``min_periods`` such periods. An echo
barely over the noise floor is too weak to pass for a person at the barge-in thresholds;
a stronger one fails the test at once."""

from __future__ import annotations

import math

# The noise floor follows a rising room slowly (min statistics): ~0.9 dB a second.
_FLOOR_RISE = 1.002


class EchoPresence:
    def __init__(self, *, margin_db: float = 3.0, min_periods: int = 100, smoothing: float = 0.03) -> None:
        self._margin = float(10.0 ** (margin_db / 10.0))
        self._min_periods = min_periods
        self._alpha = smoothing
        self.reset()

    def reset(self) -> None:
        self._floor = math.inf  # the microphone's quietest power while nothing plays
        self._playing = 0.0  # its smoothed power while the far end plays alone
        self._periods = 0  # far-end-alone periods measured

    def quiet(self, mic_energy: float) -> None:
        """A period in which the loudspeaker played nothing."""
        self._floor = min(self._floor * _FLOOR_RISE, mic_energy)

    def far_alone(self, mic_energy: float) -> None:
        """A period in which the loudspeaker played and no person was heard."""
        if self._periods == 0:
            self._playing = mic_energy
        else:
            self._playing += self._alpha * (mic_energy - self._playing)
        self._periods += 1

    @property
    def absent(self) -> bool:
        """The loudspeaker has played for ``min_periods`` without the microphone rising
        ``margin_db`` over its noise floor (False while either is unknown)."""
        if self._periods < self._min_periods or not math.isfinite(self._floor):
            return False
        return self._playing <= self._margin * max(self._floor, 1e-20)
