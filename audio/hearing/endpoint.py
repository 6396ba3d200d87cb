"""The endpointer: where a turn starts and ends, from speech / not-speech decisions.

Pure: no clock, no I/O. Time is the audio clock, counted in samples pushed. Each
:meth:`Endpointer.push` takes a piece of audio and whether it is speech (the VAD's
gated verdict) and returns what happened:

- speech starts once it has lasted ``min_speech_ms`` without a break; the start is
  reported at the first speech sample (not at the moment it was confirmed);
- the turn ends after ``end_silence_ms`` of silence, or when it has lasted
  ``max_turn_s`` since the speech started;
- with a turn-completion model (``turn_check_ms`` > 0), once a pause has lasted
  ``turn_check_ms`` the step carries a :class:`TurnCheck`: the caller asks the model
  (elsewhere, in its own time) and hands the answer to :meth:`Endpointer.verdict`. A
  probability at or over ``turn_threshold`` ends the turn then (reason ``complete``);
  otherwise ``end_silence_ms`` stays the longest wait. An answer for a pause the person
  has already broken by speaking again is ignored (each pause has its own ticket);
- with a text hold (``hold_silence_ms`` > 0), the caller may say that the words of the
  current pause are being read (:meth:`Endpointer.await_text`, when the recognizer's early
  final starts) and then what they say (:meth:`Endpointer.text_verdict`). Until the words
  are read the pause ends on nothing shorter than ``hold_silence_ms`` (the turn's transcript
  is not ready before then anyway); words that are mid-thought ("set a timer for") make the
  pause wait ``hold_silence_ms`` and overrule the model's "complete"; words that could end
  the turn let it end at once if ``end_silence_ms`` (or the model's "complete") has already
  been reached while they were read;
- the turn's audio begins ``pre_roll_ms`` before the start of speech, so the first
  syllable (which a VAD scores low) is never clipped, and runs to the end of turn.

Turns can also be opened and closed from outside (a wake word, a push-to-talk
button): :meth:`Endpointer.start_turn` and :meth:`Endpointer.end_turn`. While
:attr:`Endpointer.auto_start` is False, speech alone opens no turn.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm

_EMPTY: Pcm = np.zeros(0, dtype=np.int16)


class EndReason(StrEnum):
    SILENCE = "silence"  # end_silence_ms of silence after speech
    MAX_TURN = "max_turn"  # the turn reached max_turn_s
    FORCED = "forced"  # end_turn() (button released)
    NO_SPEECH = "no_speech"  # an opened turn heard no speech before its timeout
    COMPLETE = "complete"  # the turn model judged the pause the end of the turn


class EndpointState(StrEnum):
    IDLE = "idle"  # no turn; watching for speech if auto_start
    ONSET = "onset"  # speech seen, not yet min_speech_ms of it
    WAITING = "waiting"  # a turn was opened from outside; no speech yet
    SPEECH = "speech"  # in a turn, speech confirmed


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    min_speech_ms: int = 100
    end_silence_ms: int = 600
    max_turn_s: float = 15.0
    pre_roll_ms: int = 300
    sample_rate: int = SAMPLE_RATE
    turn_check_ms: int = 0  # ask the turn model after this much silence; 0: no model
    turn_threshold: float = 0.5  # P(complete) at which the model's pause ends the turn
    hold_silence_ms: int = 1600  # the end of a pause whose words are mid-thought; 0: no text hold

    def __post_init__(self) -> None:
        if self.min_speech_ms < 0 or self.end_silence_ms <= 0 or self.max_turn_s <= 0 or self.pre_roll_ms < 0:
            raise ValueError(f"invalid endpoint settings: {self}")
        if self.turn_check_ms < 0 or not 0.0 <= self.turn_threshold <= 1.0 or self.hold_silence_ms < 0:
            raise ValueError(f"invalid endpoint settings: {self}")

    def samples(self, ms: float) -> int:
        return round(ms * self.sample_rate / 1000)


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    """Speech began at ``start_s``; it was certain at ``detected_s``.

    The one "speech started" of the whole device: the endpointer's step (on its own
    clock, samples pushed), the listener's event (re-stamped onto the audio clock), the
    bus event ``input.speech.started`` and the state machine's speech input."""

    type: ClassVar[str] = "input.speech.started"
    start_s: float
    detected_s: float
    # With a microphone array: where the talker is, degrees counter-clockwise from the
    # array's front (+x), as estimated by the onset (the front end fills it in).
    direction_deg: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The bus event's fields (``audio_s`` on the audio clock)."""
        fields: dict[str, Any] = {"audio_s": round(self.start_s, 3)}
        if self.direction_deg is not None:
            fields["direction_deg"] = self.direction_deg
        return fields


@dataclass(frozen=True, slots=True, eq=False)
class TurnEnd:
    """The turn is over. ``end_s`` is the end of the last speech (or the cut, for
    ``max_turn`` and ``forced``); ``audio`` is the whole turn from ``audio_start_s``
    (pre-roll included) to ``detected_s``; ``start_s`` is the start of speech
    (``None`` when none was heard)."""

    start_s: float | None
    end_s: float
    detected_s: float
    reason: EndReason
    audio_start_s: float
    audio: Pcm = field(repr=False)


EndpointEvent = SpeechStarted | TurnEnd


@dataclass(frozen=True, slots=True)
class TurnCheck:
    """The pause ``ticket`` has lasted ``turn_check_ms`` (at ``at_s``): ask the turn model
    about the turn's audio so far, and pass its answer to :meth:`Endpointer.verdict`."""

    ticket: int
    at_s: float


@dataclass(frozen=True, slots=True, eq=False)
class EndpointStep:
    """What one push produced: events in order, and the audio appended to the open
    turn by this push (at the start of a turn: the pre-roll and onset audio too);
    ``check`` when the turn model should be asked now."""

    events: tuple[EndpointEvent, ...] = ()
    turn_audio: Pcm = field(default_factory=lambda: _EMPTY, repr=False)
    check: TurnCheck | None = None


class Endpointer:
    def __init__(self, settings: EndpointSettings | None = None, *, auto_start: bool = True) -> None:
        self.auto_start = auto_start
        self.apply(settings or EndpointSettings())
        self.state = EndpointState.IDLE
        self._pos = 0  # audio clock: samples pushed so far
        self._history: deque[tuple[int, Pcm]] = deque()  # recent (start, pcm) outside a turn
        self._history_samples = 0
        self._run_start = 0  # first sample of the current speech run
        self._run = 0  # samples of speech in the current run
        self._speech_start = 0
        self._last_speech_end = 0
        self._silence = 0
        self._turn_chunks: list[Pcm] = []
        self._turn_audio_start = 0
        self._wait_deadline: int | None = None
        self._settle_until = 0
        self._end_on_silence = True
        self._ticket = 0  # the pause the turn model was last asked about
        self._asked = False  # this pause has been put to the model
        self._pause = 0  # the current pause (the silence after the latest speech)
        self._awaiting_text = False  # this pause's words are being read
        self._held = False  # this pause's words are mid-thought
        self._complete_deferred = False  # the model said "complete" while the words were read

    def apply(self, settings: EndpointSettings) -> None:
        """Use ``settings`` from the next push on (a turn in progress keeps its audio and
        is judged by the new limits from here on)."""
        self.settings = settings
        self._min_speech = settings.samples(settings.min_speech_ms)
        self._end_silence = settings.samples(settings.end_silence_ms)
        self._max_turn = settings.samples(settings.max_turn_s * 1000)
        self._pre_roll = settings.samples(settings.pre_roll_ms)
        self._turn_check = settings.samples(settings.turn_check_ms)
        self._hold = settings.samples(settings.hold_silence_ms)

    # --- the audio clock -------------------------------------------------------------
    @property
    def position_s(self) -> float:
        return self._pos / self.settings.sample_rate

    @property
    def in_turn(self) -> bool:
        return self.state in (EndpointState.WAITING, EndpointState.SPEECH)

    def _s(self, sample: int) -> float:
        return sample / self.settings.sample_rate

    @property
    def pause_ms(self) -> float:
        """How long the speech of the open turn has paused: the silence since its last
        speech, 0 while speaking or outside a turn with confirmed speech."""
        if self.state != EndpointState.SPEECH:
            return 0.0
        return 1000.0 * self._silence / self.settings.sample_rate

    @property
    def pause(self) -> int:
        """The current pause's number (for :meth:`await_text` and :meth:`text_verdict`)."""
        return self._pause

    @property
    def held(self) -> bool:
        """The current pause's words were read as mid-thought: it waits ``hold_silence_ms``."""
        return self._held

    def turn_tail(self, samples: int) -> Pcm:
        """The last ``samples`` of the open turn's audio (all of it when shorter)."""
        if not self.in_turn:
            return _EMPTY
        tail: list[Pcm] = []
        need = samples
        for chunk in reversed(self._turn_chunks):
            if need <= 0:
                break
            tail.append(chunk[-need:] if len(chunk) > need else chunk)
            need -= len(chunk)
        return _join(tail[::-1])

    # --- control from outside --------------------------------------------------------
    def start_turn(
        self,
        *,
        pre_roll: bool = True,
        no_speech_timeout_ms: float | None = None,
        settle_ms: float = 0.0,
        end_on_silence: bool = True,
    ) -> EndpointStep:
        """Open a turn now (button pressed, wake word heard). The turn waits for speech;
        silence ends it only after speech was heard. With ``no_speech_timeout_ms`` it
        ends (reason ``no_speech``) if no speech starts in time. Speech in the first
        ``settle_ms`` (the tail of a wake word) does not count as the turn's speech.
        With ``end_on_silence`` False (a held push-to-talk button) only :meth:`end_turn`
        or ``max_turn_s`` end it. Returns the pre-roll as the turn's first audio."""
        if self.in_turn:
            return EndpointStep()
        audio = self._history_audio(self._pos - self._pre_roll) if pre_roll else _EMPTY
        self._turn_audio_start = self._pos - len(audio)
        self._turn_chunks = [audio] if len(audio) else []
        self._clear_history()
        self.state = EndpointState.WAITING
        self._run = 0
        self._settle_until = self._pos + self.settings.samples(settle_ms)
        self._end_on_silence = end_on_silence
        self._wait_deadline = (
            None if no_speech_timeout_ms is None else self._pos + self.settings.samples(no_speech_timeout_ms)
        )
        return EndpointStep((), audio)

    def end_turn(self) -> EndpointStep:
        """Close the open turn now (button released)."""
        if not self.in_turn:
            if self.state == EndpointState.ONSET:
                self._to_idle()
            return EndpointStep()
        return EndpointStep((self._finish(EndReason.FORCED, self._pos),))

    def reset(self) -> None:
        """Drop any turn and history; the clock keeps running."""
        self._to_idle()

    # --- audio in --------------------------------------------------------------------
    def push(self, pcm: Pcm, speech: bool) -> EndpointStep:
        """One piece of audio and the VAD's verdict for it."""
        n = len(pcm)
        start = self._pos
        self._pos += n
        events: list[EndpointEvent] = []
        appended: list[Pcm] = []
        if self.state in (EndpointState.IDLE, EndpointState.ONSET):
            self._remember(start, pcm)
            if speech and (self.auto_start or self.state == EndpointState.ONSET):
                if self.state == EndpointState.IDLE:
                    self.state = EndpointState.ONSET
                    self._run_start, self._run = start, 0
                self._run += n
                if self._run >= self._min_speech:
                    events.append(SpeechStarted(self._s(self._run_start), self._s(self._pos)))
                    audio = self._history_audio(self._run_start - self._pre_roll)
                    self._turn_audio_start = self._pos - len(audio)
                    self._turn_chunks = [audio]
                    appended.append(audio)
                    self._clear_history()
                    self._enter_speech(self._run_start)
            elif self.state == EndpointState.ONSET:
                self.state = EndpointState.IDLE
            return EndpointStep(tuple(events), _join(appended))

        # In a turn: every sample belongs to it.
        self._turn_chunks.append(pcm)
        appended.append(pcm)
        if self.state == EndpointState.WAITING:
            if speech and self._pos > self._settle_until:
                counted_from = max(start, self._settle_until)
                if self._run == 0:
                    self._run_start = counted_from
                self._run += self._pos - counted_from
                if self._run >= self._min_speech:
                    events.append(SpeechStarted(self._s(self._run_start), self._s(self._pos)))
                    self._enter_speech(self._run_start)
            else:
                self._run = 0
            if self.state == EndpointState.WAITING:
                timed_out = self._wait_deadline is not None and self._pos >= self._wait_deadline
                if timed_out or self._pos - self._turn_audio_start >= self._max_turn + self._pre_roll:
                    events.append(self._finish(EndReason.NO_SPEECH, self._pos))
            return EndpointStep(tuple(events), _join(appended))

        # SPEECH
        if speech:
            self._silence = 0
            self._last_speech_end = self._pos
            self._asked = False  # the next pause is a new question
            self._new_pause()
        else:
            self._silence += n
        check: TurnCheck | None = None
        if self._end_on_silence and self._silence >= self._silence_limit():
            events.append(self._finish(EndReason.SILENCE, self._last_speech_end))
        elif self._pos - self._speech_start >= self._max_turn:
            events.append(self._finish(EndReason.MAX_TURN, self._pos))
        elif (self._turn_check and self._end_on_silence and not self._asked
              and self._silence >= self._turn_check):
            self._asked = True
            self._ticket += 1
            check = TurnCheck(self._ticket, self._s(self._pos))
        return EndpointStep(tuple(events), _join(appended), check)

    def verdict(self, ticket: int, probability: float) -> EndpointStep:
        """The turn model's answer for the pause ``ticket``: at or over ``turn_threshold``
        the turn ends now (its end is the end of the last speech); below it, or for a pause
        already over (speech came back, the turn ended), nothing happens."""
        current = self.state == EndpointState.SPEECH and self._asked and ticket == self._ticket
        if current and self._silence > 0 and probability >= self.settings.turn_threshold:
            if self._held:
                return EndpointStep()  # the words say more is coming: they outrank the sound
            if self._awaiting_text:
                self._complete_deferred = True  # decided once the words are read
                return EndpointStep()
            return EndpointStep((self._finish(EndReason.COMPLETE, self._last_speech_end),))
        return EndpointStep()

    def await_text(self, pause: int) -> None:
        """The words of pause ``pause`` are being read (the recognizer's early final began):
        until :meth:`text_verdict` answers, this pause ends on nothing shorter than
        ``hold_silence_ms``. Nothing happens without a text hold, or for a pause already over."""
        if self._hold and self.state == EndpointState.SPEECH and pause == self._pause and self._silence > 0:
            self._awaiting_text = True

    def text_verdict(self, pause: int, mid_thought: bool) -> EndpointStep:
        """What the words of pause ``pause`` say. Mid-thought: the pause waits
        ``hold_silence_ms`` and the model's "complete" is overruled. Otherwise the pause is
        judged as without a text hold, and ends now if its end was reached while the words
        were read. An answer for a pause already over, or one not awaited, changes nothing."""
        current = self.state == EndpointState.SPEECH and pause == self._pause and self._silence > 0
        if not (current and self._awaiting_text):
            return EndpointStep()
        self._awaiting_text = False
        if mid_thought:
            self._held = True
            self._complete_deferred = False
            return EndpointStep()
        if self._complete_deferred:
            return EndpointStep((self._finish(EndReason.COMPLETE, self._last_speech_end),))
        if self._end_on_silence and self._silence >= self._end_silence:
            return EndpointStep((self._finish(EndReason.SILENCE, self._last_speech_end),))
        return EndpointStep()

    # --- internals -------------------------------------------------------------------
    def _enter_speech(self, start: int) -> None:
        self.state = EndpointState.SPEECH
        self._speech_start = start
        self._last_speech_end = self._pos
        self._silence = 0
        self._new_pause()

    def _new_pause(self) -> None:
        """Speech: the next silence is a new pause, with nothing read or held yet."""
        self._pause += 1
        self._awaiting_text = False
        self._held = False
        self._complete_deferred = False

    def _silence_limit(self) -> int:
        """The silence that ends the current pause: ``hold_silence_ms`` while its words are
        read or mid-thought (never less than ``end_silence_ms``), else ``end_silence_ms``."""
        if self._held or self._awaiting_text:
            return max(self._hold, self._end_silence)
        return self._end_silence

    def _finish(self, reason: EndReason, end: int) -> TurnEnd:
        heard = self.state == EndpointState.SPEECH
        turn = TurnEnd(
            start_s=self._s(self._speech_start) if heard else None,
            end_s=self._s(end),
            detected_s=self._s(self._pos),
            reason=reason,
            audio_start_s=self._s(self._turn_audio_start),
            audio=_join(self._turn_chunks),
        )
        self._to_idle()
        return turn

    def _to_idle(self) -> None:
        self.state = EndpointState.IDLE
        self._turn_chunks = []
        self._run = 0
        self._silence = 0
        self._wait_deadline = None
        self._end_on_silence = True
        self._asked = False
        self._awaiting_text = False
        self._held = False
        self._complete_deferred = False
        self._clear_history()

    def _remember(self, start: int, pcm: Pcm) -> None:
        self._history.append((start, pcm))
        self._history_samples += len(pcm)
        # Keep the pre-roll before the earliest sample that may still start speech.
        first = min(start, self._run_start) if self.state == EndpointState.ONSET else start
        keep_from = first - self._pre_roll
        while self._history and self._history[0][0] + len(self._history[0][1]) <= keep_from:
            _, old = self._history.popleft()
            self._history_samples -= len(old)

    def _history_audio(self, from_sample: int) -> Pcm:
        pieces = []
        for start, pcm in self._history:
            end = start + len(pcm)
            if end <= from_sample:
                continue
            pieces.append(pcm[max(0, from_sample - start):])
        return _join(pieces)

    def _clear_history(self) -> None:
        self._history.clear()
        self._history_samples = 0


def _join(pieces: list[Pcm]) -> Pcm:
    if not pieces:
        return _EMPTY
    if len(pieces) == 1:
        return pieces[0]
    return np.concatenate(pieces)
