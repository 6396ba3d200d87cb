"""Speech recognition: one interface, streaming sessions, typed results.

An :class:`AsrEngine` holds a loaded model (and, for vosk, one warm recognizer it
reuses across turns). :meth:`AsrEngine.start` opens a :class:`AsrSession` for one
turn: feed it 16 kHz int16 frames with :meth:`AsrSession.accept`, which returns a
new partial transcript when the text changed, then :meth:`AsrSession.finish` for
the final :class:`AsrResult`. Word times in a result are seconds from the start of
the session's audio; the caller adds the turn's start on the audio clock.

Engines: vosk (:mod:`.asr_vosk`, streaming, with a fetched model), Moonshine
(:mod:`.asr_moonshine`, accurate English bundled by a registry package) and
pocketsphinx (:mod:`.asr_pocketsphinx`, the last English fallback).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from edgevoice.audio.errors import AudioError
from edgevoice.audio.frames import SAMPLE_RATE, Pcm

DEFAULT_LOW_CONFIDENCE = 0.6


class AsrError(AudioError):
    code = "asr_error"


class AsrModelError(AsrError):
    """The model could not be loaded: wrong folder, wrong engine, corrupt files."""

    code = "asr_model"


@dataclass(frozen=True, slots=True)
class Word:
    word: str
    conf: float
    start: float
    end: float

    def shifted(self, seconds: float) -> Word:
        return replace(self, start=round(self.start + seconds, 3), end=round(self.end + seconds, 3))

    def as_dict(self) -> dict[str, float | str]:
        return {"word": self.word, "conf": round(self.conf, 3), "start": round(self.start, 3),
                "end": round(self.end, 3)}


@dataclass(frozen=True, slots=True)
class AsrResult:
    """The final transcript of one session. ``confidence`` is the mean word confidence
    (1.0 for no words); ``low_confidence`` is set when it is below the engine's threshold."""

    text: str
    words: tuple[Word, ...] = ()
    confidence: float = 1.0
    low_confidence: bool = False
    audio_s: float = 0.0  # seconds of audio the session was fed
    # the punctuation the engine wrote after the last word ("," for a list going on), for
    # engines that write any (Moonshine); the words above never carry it
    end_mark: str = ""
    # the words the engine weighed writing after its last one when it stopped, each with the
    # probability it gave it (Moonshine on onnxruntime; empty for engines that do not say):
    # a trailing "uh" or "and" that it heard and left out (see turn_text)
    next_words: tuple[tuple[str, float], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.text.strip()

    def shifted(self, seconds: float) -> AsrResult:
        return replace(self, words=tuple(w.shifted(seconds) for w in self.words))


def make_result(
    text: str,
    words: Sequence[Word],
    low_confidence_threshold: float,
    audio_samples: int,
    phrases: Sequence[str] = (),
    *,
    end_mark: str = "",
    next_words: Sequence[tuple[str, float]] = (),
) -> AsrResult:
    """The final result. In grammar mode (``phrases``) a text that is not one of the
    phrases (a phrase cut short, words of several phrases mixed) is low-confidence too."""
    confidence = sum(w.conf for w in words) / len(words) if words else 1.0
    clean = " ".join(text.split())
    off_grammar = bool(phrases) and bool(clean) and clean not in {" ".join(p.split()) for p in phrases}
    return AsrResult(
        text=clean,
        words=tuple(words),
        confidence=confidence,
        low_confidence=bool(words) and (confidence < low_confidence_threshold or off_grammar),
        audio_s=audio_samples / SAMPLE_RATE,
        end_mark=end_mark if clean else "",
        next_words=tuple(next_words) if clean else (),
    )


class AsrSession(ABC):
    """One turn of streaming recognition."""

    @abstractmethod
    def accept(self, pcm: Pcm) -> str | None:
        """Feed audio; the new partial transcript if it changed, else None."""

    @abstractmethod
    def finish(self) -> AsrResult:
        """End of the turn's audio: the final result. The session is closed after this."""

    def finish_soon(self) -> Callable[[], AsrResult]:
        """End of the turn's audio; call what it returns for the final result. Engines that
        decode on their own thread (Moonshine) queue the final pass and return at once, so
        the caller's thread goes on meanwhile; the others finish here."""
        result = self.finish()
        return lambda: result

    @abstractmethod
    def cancel(self) -> None:
        """Drop the turn without a result (the engine stays warm for the next one)."""


@dataclass(frozen=True, slots=True)
class AsrInfo:
    """What ``transcribe --json`` and events report about the engine."""

    engine: str
    model: str
    language: str | None
    grammar: tuple[str, ...] = field(default=())


class AsrEngine(ABC):
    """A loaded model; sessions run one at a time."""

    name: str = "asr"
    # True: a turn split at a pause is heard better whole (an engine that decodes whole
    # windows reads a sentence's second half with its first; streaming ones need not)
    hears_whole_turn: bool = False

    def __init__(self, *, model_name: str, language: str | None,
                 low_confidence: float = DEFAULT_LOW_CONFIDENCE) -> None:
        self.model_name = model_name
        self.language = language
        self.low_confidence = low_confidence

    @property
    def info(self) -> AsrInfo:
        return AsrInfo(self.name, self.model_name, self.language, self.grammar)

    @property
    @abstractmethod
    def grammar(self) -> tuple[str, ...]:
        """The phrase list in force (empty: free-form)."""

    @abstractmethod
    def set_grammar(self, phrases: Sequence[str]) -> None:
        """Restrict recognition to these phrases (empty: free-form). Between sessions only."""

    @abstractmethod
    def start(self) -> AsrSession:
        """A session for one turn. Only one session is open at a time."""

    def transcribe(self, pcm: Pcm, *, chunk_samples: int = 1600) -> AsrResult:
        """A whole utterance at once, streamed through one session."""
        session = self.start()
        for offset in range(0, len(pcm), chunk_samples):
            session.accept(pcm[offset:offset + chunk_samples])
        return session.finish()

    def warm_up(self, pcm: Pcm) -> None:  # noqa: B027 - most engines need no warming
        """Decode ``pcm`` once and discard it, so the first real turn is not slower (vosk)."""

    def close(self) -> None:  # noqa: B027 - engines without resources need nothing
        """Free the model."""
