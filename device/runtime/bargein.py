"""Barge-in in the runtime: the pure detector (:mod:`edgevoice.audio.hearing.bargein`) fed from
the front end's VAD windows and the echo canceller's view of the residual echo.

The detector's clock is the sum of the window durations it is fed; every window of
the stream is fed (with ``device_speaking`` false while nothing is in flight), so
its clock is the audio clock and its speech onset is where the interrupting turn —
pre-roll included — begins.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from edgevoice.audio.aec.base import AecStats
from edgevoice.audio.frames import SAMPLE_RATE, dbfs
from edgevoice.audio.hearing.bargein import (
    After,
    BargeInDetector,
    BargeInInput,
    BargeInUpdate,
    Decision,
    Mode,
)
from edgevoice.audio.hearing.vad import VadEngine, VadWindow

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BargeIn:
    onset_s: float


class BargeInMonitor:
    """With ``linear_vad`` (a second stream of the listener's VAD model; opt-in, ``[barge_in]
    vad_signal = linear``), while a reply is in flight the speech probability is scored on
    the canceller's *linear* output (the windows' ``heard``): the residual-echo suppressor
    holds an interrupter's first 200-300 ms down in double talk, where the linear output
    keeps them. The level test stays on the suppressed output. With a linear echo path
    the device's own residual echo never passed both; with a clipping loudspeaker the
    linear output keeps echo that does (docs/aec.md), hence not the default."""

    def __init__(self, detector: BargeInDetector, has_reference: bool = True,
                 on_mode: Callable[[Mode], None] | None = None, origin_s: float = 0.0,
                 linear_vad: VadEngine | None = None) -> None:
        self.detector = detector
        self.origin_s = origin_s  # the audio time of the first window fed (see the listener's)
        self.has_reference = has_reference
        self.on_mode = on_mode
        self.linear_vad = linear_vad
        self.decisions: dict[str, int] = {}
        self._in_reply = False

    @property
    def mode(self) -> Mode:
        return self.detector.mode

    @property
    def listening_for_speech(self) -> bool:
        """A barge-in may come from speech alone: the detector takes speech in its mode,
        needs no recognised words (``min_words`` 0) and has not fired yet. Meanwhile the
        front end holds the recognizer back (its decoding would delay the decision)."""
        detector = self.detector
        return (detector.mode in (Mode.NORMAL, Mode.SAFE_THRESHOLD) and detector.settings.min_words == 0
                and not detector.interrupted)

    def update(self, windows: Sequence[VadWindow], aec: AecStats | None, far_end_active: bool, *,
               in_reply: bool) -> BargeIn | None:
        """Feed one frame's VAD windows; a :class:`BargeIn` when the person took over."""
        residual = aec.residual_echo_dbfs if aec is not None else -120.0
        reference_ok = self.has_reference and (aec is None or aec.reference_ok or not far_end_active)
        # without a canceller the answer is known (no reference) whether or not it played
        reference_heard = far_end_active or not self.has_reference or aec is None
        linear = self.linear_vad if in_reply else None
        if linear is not None and not self._in_reply:
            linear.reset()  # a new reply: the stream starts afresh
        self._in_reply = in_reply
        taken: BargeIn | None = None
        for window in windows:
            probability = window.probability
            if linear is not None and window.heard is not None:
                probability = linear.probability(window.heard)
            update = self.detector.update(BargeInInput(
                duration_ms=round(len(window.pcm) * 1000 / SAMPLE_RATE),
                vad_probability=probability,
                speech_dbfs=dbfs(window.pcm),
                residual_echo_dbfs=residual,
                device_speaking=in_reply,
                reference_ok=reference_ok,
                unsuppressed_dbfs=None if window.heard is None else dbfs(window.heard),
                reference_heard=reference_heard,
                echo_absent=aec is not None and aec.echo_absent,
            ))
            if update.mode_changed:
                _LOGGER.debug("barge-in mode: %s", update.mode)
                if self.on_mode is not None:
                    self.on_mode(update.mode)
            if update.decision is not Decision.NONE:
                self.decisions[str(update.decision)] = self.decisions.get(str(update.decision), 0) + 1
            taken = taken or self._taken(update)
        return taken

    def words(self, count: int) -> BargeIn | None:
        return self._taken(self.detector.words(count))

    def _taken(self, update: BargeInUpdate) -> BargeIn | None:
        """A :class:`BargeIn` at the speech onset (audio clock) when the detector took it."""
        if update.decision is not Decision.BARGE_IN:
            return None
        onset_ms = update.speech_onset_ms if update.speech_onset_ms is not None else 0
        return BargeIn(self.origin_s + onset_ms / 1000.0)

    def turn_finished(self, words: int) -> After:
        """After a barge-in, once the interrupting utterance ended."""
        return self.detector.turn_finished(words)

    def reset(self) -> None:
        self.detector.reset()
