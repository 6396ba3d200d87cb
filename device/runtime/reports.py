"""What the conversation reports: when a turn's reply is over, the reply's timings as marks
on the turn's timeline, one ``metrics.turn`` event and the running percentiles telemetry
shows; and audio frames the front end failed to process."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from edgevoice.device.events import EventBus, EventType
from edgevoice.device.runtime.metrics import Mark, RunningPercentiles
from edgevoice.device.runtime.tasks import AudioClock
from edgevoice.device.runtime.turns import Turn
from edgevoice.device.speaking.reply import ReplyOutcome

_LOGGER = logging.getLogger(__name__)


class FrameFailures:
    """One bad frame (an engine error, a bug) must not end the conversation: say so, at
    most once a second, and go on with the next frame."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self._last = float("-inf")

    def __call__(self, index: int, details: str) -> None:
        now = time.monotonic()
        if now - self._last >= 1.0:
            self._last = now
            _LOGGER.error("processing audio frame %d failed; carrying on\n%s", index, details)
            self.bus.emit(EventType.ERROR, source="front_end", code="frame_failed",
                          message="processing an audio frame failed; see the log")


class TurnReports:
    """``on_finish``: told of every turn once its report is out (speculation learns the
    agent's pace from it)."""

    def __init__(self, bus: EventBus, clock: AudioClock,
                 on_finish: Callable[[Turn], None] | None = None) -> None:
        self.bus = bus
        self.clock = clock
        self.on_finish = on_finish
        self.percentiles = RunningPercentiles()
        self.last: dict[str, Any] | None = None  # the last metrics.turn's fields

    def mark_reply(self, turn: Turn, outcome: ReplyOutcome) -> None:
        """The reply's own timings (monotonic) onto the turn's audio-clock timeline."""
        t = outcome.timings
        for mark, stamp in ((Mark.FIRST_SENTENCE, t.first_sentence), (Mark.FIRST_AUDIO, t.first_audio),
                            (Mark.FIRST_PLAYED, t.first_played)):
            if stamp is not None:
                turn.timeline.mark(mark, self.clock.at(stamp))

    def finish(self, turn: Turn, status: str) -> None:
        """Emit the turn's ``metrics.turn`` once, however its reply ended."""
        if turn.timeline.status:
            return
        turn.timeline.status = status
        data = turn.timeline.as_event()
        stages = turn.timeline.stages_ms()
        if "voice_to_voice" in stages:
            data["voice_to_voice_ms"] = stages["voice_to_voice"]
        self.percentiles.add(stages)
        self.last = data
        self.bus.emit(EventType.METRICS_TURN, **data)
        if self.on_finish is not None:
            self.on_finish(turn)
