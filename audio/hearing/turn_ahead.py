"""Asking the turn model ahead of its check: the pause's audio, padded to the check's length.

The endpointer asks the turn model once a pause has lasted ``turn_check_ms`` (200 ms, so
224 in Silero's 32 ms windows), and the model takes ~100 ms of CPU here (3-5x that on a
Pi 4) to answer. Until it does, the turn cannot end, and with speculation its decision
shares the cores with piper rendering the prepared reply's first piece.

Asked ``ahead_ms`` into the pause instead, on the audio so far with silence added up to the
check's length, the model hears nearly what it would hear at the check if the silence goes
on, and is answered by then. At the check its answer (or, when it is
not in yet, the answer when it comes) goes to the endpointer for the check's ticket, which
decides as before. If the person speaks again first, the pause is over and the answer is
for nothing: one decision spent, as a check on a pause that then ended would spend it.

The ahead tickets are negative, so they never meet the endpointer's own (positive) ones on
the judge's thread. Off by default (``[endpoint] turn_ask_ahead_ms = 0``): an answer in
sooner ends sooner the pauses a person would have broken within the time it used to take
(docs/hearing.md, "Asking ahead")."""

from __future__ import annotations

import numpy as np

from edgevoice.audio.frames import Pcm
from edgevoice.audio.hearing.endpoint import Endpointer, EndpointState
from edgevoice.audio.hearing.turn_model import WINDOW_SAMPLES, TurnJudge, TurnVerdict


def padded_to(tail: Pcm, pad: int, size: int = WINDOW_SAMPLES) -> Pcm:
    """``tail`` with ``pad`` samples of digital silence after it, cut to the model's last
    ``size``. (The pause's own last stretch, repeated, was tried first: it still holds the
    tail of the last word, which the VAD lets go of ~60 ms late, and the model took it for
    speech going on: on the turn-completion tuning clips the p90 end of a finished turn,
    with the 2 s fallback, went 768 -> 2017 ms, against 736 with zeros. The pause's
    quietest window, repeated, did as zeros did.)"""
    if pad <= 0:
        return tail[-size:]
    out: Pcm = np.concatenate((tail, np.zeros(pad, dtype=np.int16)))[-size:]
    return out


class AskAhead:
    """One per listener: :meth:`step` after each endpointer step, :meth:`at_check` when the
    endpointer's check comes, :meth:`answered` for the judge's verdicts on ahead tickets."""

    def __init__(self, judge: TurnJudge, ahead_ms: int) -> None:
        self._judge = judge
        self.ahead_ms = ahead_ms
        self._ticket = 0  # the last ahead ticket (negative)
        self._pause: int | None = None  # the endpointer's pause it was asked about
        self._answer: float | None = None  # the model's P(complete) for it, once in
        self._check: int | None = None  # the endpointer's check ticket waiting for that answer

    def step(self, endpointer: Endpointer, window_samples: int) -> None:
        """Ask, if this pause reached ``ahead_ms`` and has not reached its check yet."""
        settings = endpointer.settings
        check_ms = settings.turn_check_ms
        pause_ms = endpointer.pause_ms
        if (self.ahead_ms <= 0 or not check_ms or endpointer.state != EndpointState.SPEECH
                or self._pause == endpointer.pause or not self.ahead_ms <= pause_ms < check_ms):
            return
        # the check comes at the first whole VAD window at or past turn_check_ms
        window = max(1, window_samples)
        check = -(-settings.samples(check_ms) // window) * window
        pad = check - settings.samples(pause_ms)
        self._ticket -= 1
        self._pause, self._answer, self._check = endpointer.pause, None, None
        self._judge.ask(self._ticket, padded_to(endpointer.turn_tail(WINDOW_SAMPLES), pad))

    def at_check(self, endpointer: Endpointer, ticket: int) -> tuple[bool, float | None]:
        """The endpointer's check ``ticket`` came: (asked ahead for this pause, its answer if
        it is in). When it is not in yet, :meth:`answered` hands it over for this ticket."""
        if self._pause != endpointer.pause:
            return False, None
        if self._answer is None:
            self._check = ticket
        return True, self._answer

    def answered(self, verdict: TurnVerdict) -> tuple[int, float] | None:
        """A verdict on an ahead ticket: (the check ticket, P(complete)) when the check it
        stands for has already come; None otherwise (kept for the check, or stale)."""
        if verdict.ticket != self._ticket or self._pause is None:
            return None
        self._answer = verdict.probability
        if self._check is None:
            return None
        check, self._check = self._check, None
        return check, verdict.probability
