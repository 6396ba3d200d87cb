"""The text hold's part of ``bench/turn_completion.py``: the recognizer's words at the moment
the device would have them, paced onto the audio clock, and the labels that score them.

The recognizer is the shipped default English engine (``asr.engine = "auto"``: Moonshine
tiny-en on onnxruntime, built by ``device.assembly.hearing.build_asr``). The listener opens a
session at the start of speech as on the device; at its early final (``early_final_ms`` into
a pause, or at the turn model's ask) the session's audio so far, pre-roll included, is
decoded by the real engine, exactly as ``_MoonshineSession.finish_soon`` decodes it (the same
audio, the same ``make_result``). Partials are left out: they never reach the endpointer.
The words reach the listener once the audio clock has moved on by the decode's measured CPU
time (times a board factor), through the real rule (``text_reader.verdict_of``). A decode of
audio already decoded is not run again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from edgevoice.audio.frames import Pcm
from edgevoice.audio.hearing.asr import AsrEngine, AsrError, AsrResult, AsrSession, make_result
from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine
from edgevoice.audio.hearing.text_reader import TextReader, TextVerdict, verdict_of

# Complete requests that end on a particle or a stranded preposition (and, for the false
# holds the grammar rule makes by construction, a passive and an elided verb): scored on
# their own, they say how many finished turns the hold delays. Chosen before any run.
TUNING_PARTICLE = (
    "turn it on.", "what is this for?", "what are you up to?", "turn the music down.",
    "where are you from?", "who is it for?", "the bill has been paid for.", "yes, i would like to.",
)
VALIDATION_PARTICLE = (
    "switch it off.", "what are you looking at?", "turn the volume up.", "what is it made of?",
    "speak up.", "which room is it in?", "that is what i was asking about.", "no, i do not want to.",
)
BREAK_KINDS = ("filler", "function word", "trailing and", "list in progress", "content word")
FILLERS = ("um", "uh")
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "my", "your", "to", "for", "of", "with", "at", "in", "on", "about", "by",
    "from", "into", "and", "or", "but",
})


def break_kind(fragment: str) -> str:
    """How an incomplete turn breaks off, from its fragment's last word and mark."""
    words = fragment.replace(",", " ").split()
    last = words[-1] if words else ""
    if last in FILLERS:
        return "filler"
    if last == "and":
        return "trailing and"
    if fragment.rstrip().endswith(","):
        return "list in progress"
    return "function word" if last in FUNCTION_WORDS else "content word"


@dataclass
class Readings:
    """The shipped recognizer's words for a session's audio: (result, CPU ms of the decode),
    cached by the exact audio."""

    engine: MoonshineEngine
    cache: dict[tuple[int, bytes], tuple[AsrResult, float]] = field(default_factory=dict)
    fresh_cpu_ms: list[float] = field(default_factory=list)

    def read(self, pcm: Pcm) -> tuple[AsrResult, float]:
        key = (len(pcm), hashlib.sha1(pcm.tobytes()).digest())
        if key not in self.cache:
            # process CPU: the decode runs on the engine's own worker thread while this one
            # waits, and nothing else in the bench runs meanwhile
            started = time.process_time()
            text, words, mark, next_words = self.engine.decode(pcm).result()
            cpu_ms = 1000.0 * (time.process_time() - started)
            result = make_result(text, words, self.engine.low_confidence, len(pcm), end_mark=mark,
                                 next_words=next_words)
            self.cache[key] = (result, cpu_ms)
            self.fresh_cpu_ms.append(cpu_ms)
        return self.cache[key]


class BenchAsr(AsrEngine):
    """A listener's recognizer whose sessions keep their audio and, at the early final,
    decode it with the real engine (:class:`Readings`); the turn's own final, which nothing
    here scores, is not decoded. Like the engine it stands for, it hears the whole turn
    again after a pause (``hears_whole_turn``)."""

    name = "moonshine"
    hears_whole_turn = MoonshineEngine.hears_whole_turn

    def __init__(self, readings: Readings) -> None:
        super().__init__(model_name=readings.engine.model_name, language="en")
        self.readings = readings
        self.last_cpu_ms = 0.0
        self.decodes = 0  # early finals decoded (finish_soon), and their CPU
        self.decode_cpu_ms = 0.0

    @property
    def grammar(self) -> tuple[str, ...]:
        return ()

    def set_grammar(self, phrases: Sequence[str]) -> None:
        if phrases:
            raise AsrError("the benchmark reads free speech only: no phrase grammar")

    def start(self) -> AsrSession:
        return _BenchSession(self)


class _BenchSession(AsrSession):
    def __init__(self, engine: BenchAsr) -> None:
        self._engine = engine
        self._chunks: list[Pcm] = []

    def accept(self, pcm: Pcm) -> str | None:
        self._chunks.append(np.asarray(pcm, dtype=np.int16))
        return None

    def finish(self) -> AsrResult:
        return make_result("", [], self._engine.low_confidence, sum(map(len, self._chunks)))

    def finish_soon(self) -> Callable[[], AsrResult]:
        audio = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.int16)
        engine = self._engine
        result, engine.last_cpu_ms = engine.readings.read(audio)
        engine.decodes += 1
        engine.decode_cpu_ms += engine.last_cpu_ms
        return lambda: result

    def cancel(self) -> None:
        self._chunks = []


class PacedReader(TextReader):
    """A :class:`TextReader` whose answers reach the listener when they would at 1x: once the
    audio clock has passed the early final's time plus its decode's CPU time x ``factor``.
    Keeps every answer it delivered, with the audio time it was delivered at."""

    def __init__(self, asr: BenchAsr, clock: Callable[[], float], factor: float) -> None:
        self._asr = asr
        self._clock = clock
        self._factor = factor
        self._due: list[tuple[float, TextVerdict]] = []
        self.delivered: list[tuple[float, TextVerdict]] = []

    def ask(self, pause: int, transcript: Callable[[], AsrResult]) -> None:
        at = self._clock() + self._asr.last_cpu_ms * self._factor / 1000
        self._due.append((at, verdict_of(pause, transcript())))

    def verdicts(self) -> list[TextVerdict]:
        now = self._clock()
        ready = [(now, v) for at, v in self._due if at <= now]
        self._due = [(at, v) for at, v in self._due if at > now]
        self.delivered.extend(ready)
        return [v for _, v in ready]

    def close(self) -> None:
        pass
