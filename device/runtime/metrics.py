"""Per-turn latency: marks on the audio clock, stage durations, running percentiles.

Pure: the runtime passes every time in (seconds on the duplex loop's audio clock),
so a turn's figures mean the same in the simulated room at any speed as on a
real device. A ``metrics.turn`` event carries :meth:`TurnTimeline.as_event`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum


class Mark(StrEnum):
    SPEECH_STARTED = "speech_started"
    SPEECH_END = "speech_end"  # the VAD's end of speech
    ENDPOINT = "endpoint"  # the endpointer decided the turn is over
    ASR_FINAL = "asr_final"
    RETRIEVED = "retrieved"  # the knowledge base was looked up
    REQUEST_SENT = "request_sent"
    EARLY_FINAL = "early_final"  # the early final was told (the pause reached early_final_ms)
    EARLY_TEXT = "early_text"  # ... and its text was known (the last attempt's, both)
    SPECULATED = "speculated"  # a reply was prepared on the early final (the last attempt's)
    FIRST_TEXT = "first_text"
    FIRST_SENTENCE = "first_sentence"  # first sentence handed to TTS
    FIRST_AUDIO = "first_audio"  # first audio synthesized
    FIRST_PLAYED = "first_played"  # first sample left the loudspeaker
    INTERRUPT_ONSET = "interrupt_onset"  # speech onset (or button press) that interrupted
    PLAYBACK_STOPPED = "playback_stopped"


# (stage name, from mark, to mark), in pipeline order.
STAGES: tuple[tuple[str, Mark, Mark], ...] = (
    ("endpoint", Mark.SPEECH_END, Mark.ENDPOINT),
    ("asr_final", Mark.ENDPOINT, Mark.ASR_FINAL),
    ("retrieval", Mark.ASR_FINAL, Mark.RETRIEVED),
    ("request", Mark.ASR_FINAL, Mark.REQUEST_SENT),
    ("first_text", Mark.REQUEST_SENT, Mark.FIRST_TEXT),
    ("first_sentence", Mark.FIRST_TEXT, Mark.FIRST_SENTENCE),
    ("tts_first_audio", Mark.FIRST_SENTENCE, Mark.FIRST_AUDIO),
    ("playout", Mark.FIRST_AUDIO, Mark.FIRST_PLAYED),
    ("voice_to_voice", Mark.SPEECH_END, Mark.FIRST_PLAYED),
    ("interrupt_to_silence", Mark.INTERRUPT_ONSET, Mark.PLAYBACK_STOPPED),
)


@dataclass(slots=True)
class TurnTimeline:
    """The marks of one turn. The first time a mark is set counts; later ones are ignored."""

    turn_id: str
    marks: dict[Mark, float] = field(default_factory=dict)
    status: str = ""
    # Figures measured off the audio clock (the knowledge lookup's own time, in ms).
    extra: dict[str, object] = field(default_factory=dict)

    def mark(self, mark: Mark, at_s: float) -> None:
        self.marks.setdefault(mark, at_s)

    def has(self, mark: Mark) -> bool:
        return mark in self.marks

    def stages_ms(self) -> dict[str, float]:
        """Durations of every stage whose two marks are set, in milliseconds."""
        out: dict[str, float] = {}
        for name, start, end in STAGES:
            if start in self.marks and end in self.marks:
                out[name] = round((self.marks[end] - self.marks[start]) * 1000.0, 1)
        return out

    def as_event(self) -> dict[str, object]:
        return {
            "turn_id": self.turn_id,
            "status": self.status,
            "marks_s": {str(k): round(v, 4) for k, v in self.marks.items()},
            "stages_ms": self.stages_ms(),
            **self.extra,
        }


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


class RunningPercentiles:
    """p50/p95 per stage over the last ``window`` turns (for telemetry)."""

    def __init__(self, window: int = 200) -> None:
        self._window = window
        self._values: dict[str, deque[float]] = {}

    def add(self, stages_ms: dict[str, float]) -> None:
        for name, value in stages_ms.items():
            self._values.setdefault(name, deque(maxlen=self._window)).append(value)

    def summary(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for name, values in self._values.items():
            data = list(values)
            out[name] = {
                "p50": round(percentile(data, 50), 1),
                "p95": round(percentile(data, 95), 1),
                "n": float(len(data)),
            }
        return out
