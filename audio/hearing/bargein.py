"""The barge-in detector: pure decision logic (no clock, no I/O, no audio).

The runtime feeds it once per period while the device may be speaking, and forwards
partial ASR words and button presses; it answers what to do. Time is the sum of the
``duration_ms`` it was fed (the audio clock), never a wall clock.

    det = BargeInDetector(BargeInSettings(min_speech_ms=200, min_words=1))
    upd = det.update(BargeInInput(duration_ms=10, vad_probability=p,
                                  speech_dbfs=level_of_cancelled_period,
                                  residual_echo_dbfs=aec.stats.residual_echo_dbfs,
                                  device_speaking=speaker_busy,
                                  reference_ok=aec.stats.reference_ok,
                                  unsuppressed_dbfs=level_before_suppression))
    if upd.mode_changed: emit an event with upd.mode (normal / safe_threshold / button_only)
    if upd.decision is Decision.BARGE_IN:
        stop playback, cancel TTS and agent; the user's turn starts at upd.speech_onset_ms
        (audio clock) — take the audio from there, pre-roll included.
    upd = det.words(n)        # partial ASR word count while a candidate is pending
    upd = det.button()        # a button press interrupts in every mode
    after = det.turn_finished(words)   # after a barge-in, once the utterance ended:
        # After.NEW_TURN (words heard), After.RESUME (no words: resume the reply from
        # the sentence it stopped in) or After.DROP (no words, resume disabled)

Rules: a barge-in needs speech (VAD probability at or above the threshold *and* the
cancelled signal at least ``margin_db`` above the residual-echo level) sustained for
``min_speech_ms``; gaps up to ``hangover_ms`` do not break it. Where the level before
the canceller's residual-echo suppressor is known (its linear output), speech must also
have come through the suppressor nearly whole (at most ``max_suppression_db`` taken):
what the suppressor cuts hard is what it judged to be echo. The residual-echo estimate
models only the linear echo path; a clipping loudspeaker leaves echo above it that the
suppressor still recognises (with no echo at all, ``echo_absent``, its cut proves nothing
and is not asked about). Of the sustained speech, ``background_loud_ms`` must stand
``background_margin_db`` over the room's background as it was at the speech's onset
(:class:`.background.BackgroundLevel`, fed every window, with no more than
``background_cut_db`` of the suppressor's cut taken off its level): other people's talk, a
television or a passing car is speech to the VAD, and the room's own. With
``min_words`` > 0 the sustained speech is only a candidate (playback goes on) until that
many words are recognised; if the speech stops first it was a backchannel ("mm-hm") and
is ignored.
Without a working reference (AEC off or unhealthy) the detector is in safe mode: a
higher threshold and longer speech (``safe_mode = threshold``) or button only
(``safe_mode = button_only``). It returns to normal after the reference has been good
for ``recover_ms`` while the device played (``reference_heard``): silence neither proves
nor fails a canceller, so the device's first reply, before the canceller has converged,
starts in the safe mode however long the device was quiet before it. A microphone that
does not hear the loudspeaker at all (``echo_absent``, while it played) counts as good
too: nothing it hears can be the device's own voice.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from edgevoice.audio.hearing.background import BackgroundLevel


class SafeMode(StrEnum):
    THRESHOLD = "threshold"
    BUTTON_ONLY = "button_only"


class Mode(StrEnum):
    NORMAL = "normal"
    SAFE_THRESHOLD = "safe_threshold"
    BUTTON_ONLY = "button_only"
    DISABLED = "disabled"


class Decision(StrEnum):
    NONE = "none"
    CANDIDATE = "candidate"  # speech sustained; waiting for min_words (playback continues)
    BARGE_IN = "barge_in"  # stop playback now
    BACKCHANNEL = "backchannel"  # the candidate ended without enough words: ignored


class After(StrEnum):
    NEW_TURN = "new_turn"
    RESUME = "resume"
    DROP = "drop"


@dataclass(frozen=True, slots=True)
class BargeInSettings:
    enabled: bool = True
    min_speech_ms: int = 150  # [barge_in] min_speech_ms: what the daemon runs with
    min_words: int = 0
    vad_threshold: float = 0.5
    margin_db: float = 6.0
    hangover_ms: int = 60
    release_ms: int = 300
    safe_mode: SafeMode = SafeMode.THRESHOLD
    safe_vad_threshold: float = 0.85
    safe_min_speech_ms: int = 400
    safe_margin_db: float = 12.0
    recover_ms: int = 1000
    # A reference that has proven itself (normal mode reached through recover_ms of good
    # readings) is trusted through a bad reading shorter than this: a person talking over
    # the device pulls the canceller's echo-reduction reading down for a moment, right
    # when the barge-in is being decided. A longer failure still ends in the safe mode.
    degrade_ms: int = 2000
    # Speech the residual-echo suppressor took more than this from is echo (0: no test).
    max_suppression_db: float = 6.0
    # Of the sustained speech, background_loud_ms must stand background_margin_db over the
    # room's background as it was when the speech began (the floor over background_span_ms
    # of the echo-cancelled level, speaking or not): babble, a television or a passing car
    # is speech to the VAD but is the room's own sound (0: no test). Chosen on
    # bench/aec_rooms' tuning rooms (docs/aec.md): self-interruptions 41 -> 3, 30/30 caught.
    background_margin_db: float = 12.0
    background_span_ms: int = 1000
    background_loud_ms: int = 120
    # The floor reads each window with at most this much of the suppressor's cut taken off:
    # while the device talks, the suppressor pulls the room's own sound down with the echo,
    # and when the device pauses that sound came back 12-17 dB over a floor it had never
    # had (babble in tuning room r42). Chosen on the tuning rooms (docs/aec.md, seventh
    # round): 6-12 dB took r42's self-interruption, 14 and more did not; 10, the middle.
    background_cut_db: float = 10.0
    resume_after_false_barge_in: bool = True

    def __post_init__(self) -> None:
        if self.min_speech_ms < 0 or self.safe_min_speech_ms < 0 or self.min_words < 0:
            raise ValueError("min_speech_ms, safe_min_speech_ms and min_words must be >= 0")
        if not 0.0 <= self.vad_threshold <= 1.0 or not 0.0 <= self.safe_vad_threshold <= 1.0:
            raise ValueError("VAD thresholds are probabilities between 0 and 1")


@dataclass(frozen=True, slots=True)
class BargeInInput:
    """One period as the detector sees it."""

    duration_ms: int
    vad_probability: float
    speech_dbfs: float  # level of the echo-cancelled period
    residual_echo_dbfs: float  # the echo canceller's residual-echo estimate
    device_speaking: bool
    reference_ok: bool = True
    # level of the same audio before the residual-echo suppressor (the canceller's linear
    # output); None when there is no such stage
    unsuppressed_dbfs: float | None = None
    # the far end played in this period, so ``reference_ok`` was put to the test; False
    # (silence) leaves the mode as it is
    reference_heard: bool = True
    # the microphone does not hear the loudspeaker at all: the device's voice cannot pass
    # for a person, so a reference that proved nothing still leaves the safe mode
    echo_absent: bool = False


@dataclass(frozen=True, slots=True)
class BargeInUpdate:
    decision: Decision
    mode: Mode
    mode_changed: bool = False
    speech_ms: int = 0  # sustained speech so far
    speech_onset_ms: int | None = None  # audio-clock time the speech began
    words: int = 0


class BargeInDetector:
    """See the module docstring for the protocol."""

    def __init__(self, settings: BargeInSettings | None = None) -> None:
        self.settings = settings or BargeInSettings()
        self._now = 0
        self._mode = Mode.NORMAL if self.settings.enabled else Mode.DISABLED
        self._good_ms = 0
        self._bad_ms = 0
        self._proven = False  # normal mode was reached through good readings
        self._onset: int | None = None
        self._clear()
        self._interrupted = False
        self._background = BackgroundLevel(span_ms=self.settings.background_span_ms)

    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def now_ms(self) -> int:
        return self._now

    @property
    def interrupted(self) -> bool:
        """A barge-in happened and :meth:`turn_finished` has not been called yet."""
        return self._interrupted

    def _clear(self) -> None:
        self._speech_ms = 0
        self._loud_ms = 0  # of it, how long stood background_margin_db over the room
        self._run_floor: float | None = None
        self._gap_ms = 0
        self._onset = None
        self._candidate = False
        self._words = 0

    def _next_mode(self, reference_ok: bool, reference_heard: bool, duration_ms: int,
                   echo_absent: bool = False) -> Mode:
        s = self.settings
        if not s.enabled:
            return Mode.DISABLED
        if not reference_heard:
            # Quiet readings counted as good once: a second of silence after the wake word
            # "proved" a canceller that had never heard the loudspeaker, and the first
            # reply's unconverged echo then barged in on it.
            return self._mode
        safe = Mode.SAFE_THRESHOLD if s.safe_mode is SafeMode.THRESHOLD else Mode.BUTTON_ONLY
        if not reference_ok and not echo_absent:
            self._good_ms = 0
            self._bad_ms += duration_ms
            if self._mode is Mode.NORMAL and self._proven and self._bad_ms < s.degrade_ms:
                return Mode.NORMAL
            self._proven = False
            return safe
        self._bad_ms = 0
        self._good_ms += duration_ms
        if self._mode is not Mode.NORMAL and self._good_ms >= s.recover_ms:
            # echo-free readings earn degrade_ms's grace as well: a person talking over the
            # device is what breaks them first, right when the barge-in is being decided
            self._proven = True
            return Mode.NORMAL
        return self._mode

    def _update(self, decision: Decision, changed: bool = False) -> BargeInUpdate:
        return BargeInUpdate(decision, self._mode, changed, self._speech_ms, self._onset, self._words)

    def update(self, period: BargeInInput) -> BargeInUpdate:
        """Feed one period; returns the decision for it."""
        s = self.settings
        start = self._now
        self._now += period.duration_ms
        floor = self._background.dbfs  # the room before this window
        self._background.push(self._room_level(period), period.duration_ms)
        mode = self._next_mode(period.reference_ok, period.reference_heard, period.duration_ms,
                               period.echo_absent)
        changed = mode is not self._mode
        self._mode = mode
        if self._interrupted or not period.device_speaking or mode in (Mode.DISABLED, Mode.BUTTON_ONLY):
            self._clear()
            return self._update(Decision.NONE, changed)
        normal = mode is Mode.NORMAL
        threshold = s.vad_threshold if normal else s.safe_vad_threshold
        margin = s.margin_db if normal else s.safe_margin_db
        needed = s.min_speech_ms if normal else s.safe_min_speech_ms
        is_speech = (period.vad_probability >= threshold
                     and period.speech_dbfs >= period.residual_echo_dbfs + margin
                     and not self._suppressed(period))
        if is_speech:
            if self._onset is None:
                self._onset = start
                self._run_floor = floor  # the room as it was before the speech
            if self._over_background(period.speech_dbfs):
                self._loud_ms += period.duration_ms
            self._speech_ms += self._gap_ms + period.duration_ms
            self._gap_ms = 0
        elif self._onset is not None:
            self._gap_ms += period.duration_ms
            limit = s.release_ms if self._candidate else s.hangover_ms
            if self._gap_ms > limit:
                backchannel = self._candidate
                self._clear()
                return self._update(Decision.BACKCHANNEL if backchannel else Decision.NONE, changed)
        if self._onset is None or self._speech_ms < needed or not self._stood_out(needed):
            return self._update(Decision.NONE, changed)
        if s.min_words > 0 and self._words < s.min_words:
            self._candidate = True
            return self._update(Decision.CANDIDATE, changed)
        return self._barge_in(changed)

    def _suppressed(self, period: BargeInInput) -> bool:
        """The residual-echo suppressor took more than ``max_suppression_db`` of it."""
        limit = self.settings.max_suppression_db
        unsuppressed = period.unsuppressed_dbfs
        # With no echo at all, whatever the suppressor took was not echo: it reads a room's
        # noise as a residual to remove, and would take the person with it.
        return (limit > 0 and unsuppressed is not None and not period.echo_absent
                and period.speech_dbfs < unsuppressed - limit)

    def _room_level(self, period: BargeInInput) -> float:
        """The window's level as the room's floor reads it: the echo-cancelled level, but no
        more than ``background_cut_db`` under its level before the suppressor."""
        if period.unsuppressed_dbfs is None:
            return period.speech_dbfs
        return max(period.speech_dbfs, period.unsuppressed_dbfs - self.settings.background_cut_db)

    def _stood_out(self, needed_ms: int) -> bool:
        """Enough of the speech stood over the room's background (never more of it than
        the speech needs in all)."""
        s = self.settings
        return s.background_margin_db <= 0 or self._loud_ms >= min(s.background_loud_ms, needed_ms)

    def _over_background(self, level_dbfs: float) -> bool:
        """The window stands ``background_margin_db`` over the room's floor (or the floor
        is not known yet, or the test is off)."""
        margin = self.settings.background_margin_db
        return margin <= 0 or self._run_floor is None or level_dbfs >= self._run_floor + margin

    def _barge_in(self, changed: bool = False) -> BargeInUpdate:
        self._interrupted = True
        update = self._update(Decision.BARGE_IN, changed)
        self._candidate = False
        return update

    def words(self, count: int) -> BargeInUpdate:
        """Partial ASR: ``count`` words recognised in the current speech so far."""
        self._words = max(self._words, count)
        if self._candidate and self._words >= self.settings.min_words and not self._interrupted:
            return self._barge_in()
        return self._update(Decision.CANDIDATE if self._candidate else Decision.NONE)

    def button(self) -> BargeInUpdate:
        """A button press interrupts playback in every mode."""
        if self._onset is None:
            self._onset = self._now
        return self._barge_in()

    def turn_finished(self, words: int) -> After:
        """After a barge-in, when the user's utterance has ended with ``words`` words."""
        self._interrupted = False
        self._clear()
        if words > 0:
            return After.NEW_TURN
        return After.RESUME if self.settings.resume_after_false_barge_in else After.DROP

    def reset(self) -> None:
        """Forget any speech in progress (a new reply starts)."""
        self._interrupted = False
        self._clear()
