"""Does the microphone hear the loudspeaker at all? Pure: fed energies, no clock, no I/O.

A canceller proves its reference by removing echo (ERLE); with no echo to remove it can
prove nothing, and barge-in stays in its safe mode (a higher threshold and longer speech)
for good. That is the right caution when the reference might be wrong, and the wrong one
when the microphone simply does not hear the loudspeaker: a handset or headset, an
intercom's remote speaker, a loudspeaker switched off. There the device's own voice cannot
interrupt it, and the safe mode only misses people (2-3 of 42 talk-overs per 10 minutes
in ``bench/realtime_conversation``, whose microphone hears no loudspeaker).

The test is conservative: while the far end plays alone (the suppressor hears no person),
the microphone's smoothed power must stay within ``margin_db`` of its own quietest level
(its noise floor, measured while nothing plays) for ``min_periods`` such periods in a row.
An echo barely over the noise floor is too weak to pass for a person at the barge-in
thresholds; a stronger one keeps the test from passing.

Once it has passed, the answer holds until the microphone stands over the margin, with
what it hears explained by the reference (the caller's judgement: the error's coherence
with it), for ``hold_periods`` far-end-alone periods with no quiet one between: a
loudspeaker switched on is heard within that. A person is not the reference's: with no echo
to learn, the suppressor cannot tell them from the far end alone (its residual estimate is
the unlearnt filter's), and their talk-over must not bring it back mid-barge-in."""

from __future__ import annotations

import math

# The noise floor follows a rising room slowly (min statistics): ~0.9 dB a second.
_FLOOR_RISE = 1.002


class EchoPresence:
    def __init__(self, *, margin_db: float = 3.0, min_periods: int = 100, hold_periods: int = 50,
                 explained_share: float = 0.2, smoothing: float = 0.03) -> None:
        self._margin = float(10.0 ** (margin_db / 10.0))
        self._explained_share = explained_share
        self._min_periods = min_periods
        self._hold_periods = hold_periods
        self._alpha = smoothing
        self.reset()

    def reset(self) -> None:
        self._floor = math.inf  # the microphone's quietest power while nothing plays
        self._playing = 0.0  # its smoothed power while the far end plays alone
        self._periods = 0  # far-end-alone periods measured
        self._quiet_run = 0  # far-end-alone periods in a row within the margin
        self._heard_run = 0  # ... over it and explained by the reference (since the last quiet one)
        self._absent = False

    def quiet(self, mic_energy: float) -> None:
        """A period in which the loudspeaker played nothing."""
        self._floor = min(self._floor * _FLOOR_RISE, mic_energy)

    def far_alone(self, mic_energy: float, explained: float = 1.0) -> None:
        """A period in which the loudspeaker played and no person was heard; ``explained``:
        the share of what the microphone heard that the reference explains (its coherence
        with it; under ``explained_share`` it is not the loudspeaker, whatever its level)."""
        if self._periods == 0:
            self._playing = mic_energy
        else:
            self._playing += self._alpha * (mic_energy - self._playing)
        self._periods += 1
        loud = not math.isfinite(self._floor) or self._playing > self._margin * max(self._floor, 1e-20)
        self._quiet_run = 0 if loud else self._quiet_run + 1
        if not loud:
            self._heard_run = 0
        elif explained >= self._explained_share:
            self._heard_run += 1
        if self._absent and self._heard_run >= self._hold_periods:
            self._absent = False
        elif not self._absent and self._quiet_run >= self._min_periods:
            self._absent = True

    @property
    def absent(self) -> bool:
        """The loudspeaker has played for ``min_periods`` in a row without the microphone
        rising ``margin_db`` over its noise floor, and has not been heard for
        ``hold_periods`` in a row since (False while the floor is unknown)."""
        return self._absent
