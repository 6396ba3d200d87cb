"""The hearing pipeline: frames in, typed events out.

:class:`Listener` chains the VAD, the endpointer, the wake word detector and the
ASR engine. It is synchronous and has no clock of its own: time is the audio clock
(samples fed, plus ``origin_s``), so it runs in whatever thread feeds it and is
tested by feeding it audio. Each event (:mod:`.events`) knows its bus ``type`` and its fields
(``as_dict()``), and the runtime publishes it as it is (``bus.announce(event)``):

=========================  ===========================
``SpeechStarted``          ``input.speech.started`` (the endpointer's, on the audio clock)
``SpeechStopped``          ``input.speech.stopped``
``WakeWordDetected``       ``input.wake_word``
``PartialTranscript``      ``transcript.user.delta``
``FinalTranscript``        ``transcript.user``
``TurnDiscarded``          ``input.turn.discarded``
=========================  ===========================

Two more are for the runtime only, never published: ``EarlyTranscript`` (the early final
began; its text is the turn's if it ends now) and ``SpeechResumed`` (speech came back).

Modes: ``always`` (every detected turn is a user turn), ``wakeword`` (a turn follows
the wake word; :meth:`Listener.open_follow_up` accepts one more turn without it for
``follow_up_s``), ``button`` (push-to-talk: hold to talk, or press to start and the
VAD ends the turn). With ``streaming`` the ASR decodes while the person speaks
(partials, and the final comes right after the end of speech); without it the turn
is decoded in one go at its end. Turn audio includes the pre-roll.

Early final (``early_final_ms``, streaming and free-form only): the recognizer's final
pass runs once the speech has paused that long, inside the silence that ends the turn,
so the transcript is ready the moment the turn ends instead of a final pass later. If
the person goes on, a new session takes the audio from shortly before the speech came
back, and the turn's transcript joins the pieces (word times on the one audio clock);
one that ``hears_whole_turn`` (Moonshine) takes the whole turn again instead. Phrase
grammars are matched whole, so there the final pass waits for the turn's end. With
``early_decode_ms`` (under ``early_final_ms``) the pass starts that far into the pause and its
words are still told (``EarlyTranscript``) at ``early_final_ms``: its time is off the path
to the reply, and a pause that ends in between tells nothing (and takes nothing back).

Turn model (``turn_judge``): when the endpointer asks (a pause of ``turn_check_ms``), the
turn's last 8 s go to the judge, which scores them on its own thread; its answers are
handed to the endpointer at the start of the next :meth:`Listener.process`, so a turn the
model calls complete ends one frame after the answer, and the audio thread never waits.
The early final runs when the model is asked, if that comes before ``early_final_ms``:
the turn may end as soon as the model answers, and a final pass begun only then would
stand between the end of the turn and the reply.

Text hold (the endpoint's ``hold_silence_ms`` > 0): the early final's words are read too
(``text_reader``, on its own thread; the rule is :mod:`.turn_text`). Until they are read the
pause is not ended by the short silence nor by the model, and words that are mid-thought
("set a timer for", "apples, bananas,") make it wait ``hold_silence_ms``
(:meth:`Endpointer.await_text`, :meth:`Endpointer.text_verdict`). Answers are handed over at
the start of the next :meth:`Listener.process`, like the model's.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from edgevoice.audio.frames import Pcm
from edgevoice.audio.hearing.asr import AsrEngine, AsrResult, AsrSession, make_result
from edgevoice.audio.hearing.endpoint import (
    Endpointer,
    EndpointSettings,
    EndpointState,
    EndpointStep,
    EndReason,
    SpeechStarted,
    TurnEnd,
)
from edgevoice.audio.hearing.events import (
    EarlyTranscript,
    FinalPending,
    FinalTranscript,
    HearingEvent,
    PartialTranscript,
    SpeechResumed,
    SpeechStopped,
    TurnDiscarded,
    WakeWordDetected,
)
from edgevoice.audio.hearing.modes import ButtonMode, ListenMode
from edgevoice.audio.hearing.text_reader import TextReader, TextWorker
from edgevoice.audio.hearing.turn_ahead import AskAhead
from edgevoice.audio.hearing.turn_model import WINDOW_SAMPLES, TurnJudge
from edgevoice.audio.hearing.vad import VoiceActivity
from edgevoice.audio.hearing.wakeword import WakeWordDetection, WakeWordDetector

_LOGGER = logging.getLogger(__name__)

# While the VAD's quiet gate sleeps (nothing above the room's noise floor, nobody
# talking, nothing playing) the wake word model rests too; the audio of this long
# before the gate wakes is what it hears first, so the start of the wake word is in it.
WAKE_CONTEXT_S = 0.3


class Listener:
    def __init__(
        self,
        vad: VoiceActivity,
        asr: AsrEngine | None,
        *,
        endpoint: EndpointSettings | None = None,
        mode: ListenMode = ListenMode.ALWAYS,
        wakeword: WakeWordDetector | None = None,
        button_mode: ButtonMode = ButtonMode.HOLD,
        follow_up_s: float = 0.0,
        streaming: bool = True,
        early_final_ms: float = 100.0,
        early_decode_ms: float = 0.0,
        wake_timeout_s: float = 5.0,
        wake_settle_ms: float = 300.0,
        origin_s: float = 0.0,
        turn_judge: TurnJudge | None = None,
        turn_ask_ahead_ms: int = 0,
        text_reader: TextReader | None = None,
        owns_asr: bool = False,
    ) -> None:
        if mode == ListenMode.WAKEWORD and wakeword is None:
            raise ValueError("listen mode 'wakeword' needs a wake word detector")
        self.vad = vad
        self.asr = asr
        self._owns_asr = owns_asr  # close() closes it; a shared one is its loader's to close
        self.mode = ListenMode(mode)
        self.wakeword = wakeword if self.mode == ListenMode.WAKEWORD else None
        self.button_mode = ButtonMode(button_mode)
        self.follow_up_s = follow_up_s
        self.streaming = streaming
        self.early_final_ms = early_final_ms
        self.early_decode_ms = early_decode_ms
        self.wake_timeout_s = wake_timeout_s
        self.wake_settle_ms = wake_settle_ms
        self.origin_s = origin_s
        self.turn_judge = turn_judge
        # asks the model before its check, on the pause padded to the check's length
        self._ahead = AskAhead(turn_judge, turn_ask_ahead_ms) if turn_judge is not None else None
        self._window_samples = 512  # the VAD's window, as last seen (where the check falls)
        # True: a turn's end does not wait for its final pass (FinalPending); the daemon's
        # front-end thread sets it, so it goes on hearing while the recognizer finishes.
        self.defer_final = False
        # reads the early final's words for the text hold (its thread starts on first use)
        self.text_reader: TextReader = text_reader if text_reader is not None else TextWorker()
        self.endpointer = Endpointer(endpoint, auto_start=self.mode == ListenMode.ALWAYS)
        self._session: AsrSession | None = None
        # The open turn's recognition: samples of its audio fed so far (pre-roll
        # included), the turn sample the open session starts at, the pieces finished
        # early (each with the turn sample it starts at) and where their pause began.
        self._turn_fed = 0
        self._session_at = 0
        # A piece is (its result, when wanted; the turn sample it starts at): an early
        # final decoded on the engine's own thread is only waited for at the turn's end.
        self._pieces: list[tuple[Callable[[], AsrResult], int]] = []
        self._paused_from = 0
        # the early final's decode began in this pause and its words were not handed over yet
        self._early_unannounced = False
        self._follow_up_until: float | None = None
        self._wake_word_waived = False
        self._enabled = True
        # While True, turn audio is kept, not decoded (see hold_recognition's docs).
        self.hold_recognition = False
        self._held: list[Pcm] = []
        self._wake_context: deque[Pcm] = deque()  # frames the wake word has not heard yet
        self._wake_context_samples = 0

    # --- state -----------------------------------------------------------------------
    @property
    def now(self) -> float:
        """The audio clock: seconds fed so far, from ``origin_s``."""
        return self.origin_s + self.endpointer.position_s

    @property
    def in_turn(self) -> bool:
        return self.endpointer.in_turn

    @property
    def enabled(self) -> bool:
        return self._enabled

    def set_enabled(self, enabled: bool) -> list[HearingEvent]:
        """Stop (or resume) accepting turns; an open turn is discarded."""
        events: list[HearingEvent] = []
        if not enabled and (self.endpointer.in_turn or self._session is not None):
            self.endpointer.reset()
            self._cancel_session()
            events.append(TurnDiscarded("disabled", self.now))
        if not enabled:
            self.endpointer.reset()
        self._enabled = enabled
        self._update_auto_start()
        return events

    def open_follow_up(self) -> None:
        """After a reply, accept a turn without the wake word for ``follow_up_s``."""
        if self.mode == ListenMode.WAKEWORD and self.follow_up_s > 0:
            self._follow_up_until = self.now + self.follow_up_s
            self._update_auto_start()

    def waive_wake_word(self, waived: bool) -> None:
        """While ``waived`` (a timer rings, and "stop" needs no wake word), speech opens a
        turn in wakeword mode, every time, until it is withdrawn. Held for as long as the
        cause lasts, not a window on the audio clock: a window renewed from the event loop
        lapsed whenever the loop fell behind the audio."""
        self._wake_word_waived = waived
        self._update_auto_start()

    # --- audio in --------------------------------------------------------------------
    def process(self, pcm: Pcm, heard: Pcm | None = None) -> list[HearingEvent]:
        """One frame of 16 kHz int16 audio (any length). The VAD and the wake word judge
        ``pcm``; turns (and so the recognizer) get ``heard`` when given: the echo
        canceller's linear output, which keeps a talker's first word in double talk."""
        events: list[HearingEvent] = []
        if self.turn_judge is not None:
            for verdict in self.turn_judge.verdicts():
                if verdict.ticket >= 0:
                    self._handle(self.endpointer.verdict(verdict.ticket, verdict.probability), events)
                elif self._ahead is not None and (taken := self._ahead.answered(verdict)) is not None:
                    self._handle(self.endpointer.verdict(*taken), events)
        for reading in self.text_reader.verdicts():
            self._handle(self.endpointer.text_verdict(reading.pause, reading.mid_thought), events)
        for window in self.vad.process(pcm, heard):
            self._window_samples = len(window.pcm)
            self._update_auto_start()
            self._handle(self.endpointer.push(window.turn_audio, window.speech), events)
        if self.wakeword is not None:
            for detection in self._hear_wake_word(self.wakeword, pcm):
                if not self._enabled or self.endpointer.in_turn:
                    continue
                events.append(WakeWordDetected(self.origin_s + detection.t, detection.name,
                                               detection.probability))
                self._follow_up_until = None
                self._open_turn(events, pre_roll=False, timeout_s=self.wake_timeout_s,
                                settle_ms=self.wake_settle_ms)
        return events

    def _hear_wake_word(self, detector: WakeWordDetector, pcm: Pcm) -> list[WakeWordDetection]:
        """The wake word model hears ``pcm`` unless the VAD's quiet gate sleeps: then the
        frame waits in a short context, and what falls out of it goes by unheard (its
        clock still moves). When the gate wakes, the context is heard first, in order."""
        if self.vad.asleep:
            self._wake_context.append(pcm)
            self._wake_context_samples += len(pcm)
            limit = round(WAKE_CONTEXT_S * self.endpointer.settings.sample_rate)
            while self._wake_context_samples - len(self._wake_context[0]) >= limit:
                old = self._wake_context.popleft()
                self._wake_context_samples -= len(old)
                detector.skip(len(old))
            return []
        detections: list[WakeWordDetection] = []
        while self._wake_context:
            detections.extend(detector.process(self._wake_context.popleft()))
        self._wake_context_samples = 0
        detections.extend(detector.process(pcm))
        return detections

    # --- push to talk ----------------------------------------------------------------
    def button_pressed(self) -> list[HearingEvent]:
        events: list[HearingEvent] = []
        if self.mode != ListenMode.BUTTON or not self._enabled:
            return events
        if self.endpointer.in_turn:
            if self.button_mode == ButtonMode.PRESS:
                self._handle(self.endpointer.end_turn(), events)
            return events
        self._open_turn(
            events, pre_roll=True,
            timeout_s=None if self.button_mode == ButtonMode.HOLD else self.wake_timeout_s,
            end_on_silence=self.button_mode == ButtonMode.PRESS,
        )
        return events

    def button_released(self) -> list[HearingEvent]:
        events: list[HearingEvent] = []
        if self.mode == ListenMode.BUTTON and self.button_mode == ButtonMode.HOLD:
            self._handle(self.endpointer.end_turn(), events)
        return events

    def start_turn_now(self) -> list[HearingEvent]:
        """Open a turn now, pre-roll included, and let the VAD end it: a button press
        while idle (outside push-to-talk) or a barge-in the endpointer did not open."""
        events: list[HearingEvent] = []
        if not self._enabled or self.endpointer.in_turn:
            return events
        self._open_turn(events, pre_roll=True, timeout_s=self.wake_timeout_s)
        return events

    def end_turn_now(self) -> list[HearingEvent]:
        """End the open turn now, as its endpoint (a remote recognizer said the speech ended)."""
        events: list[HearingEvent] = []
        if self.endpointer.in_turn:
            self._handle(self.endpointer.end_turn(), events)
        return events

    def close(self) -> None:
        self._cancel_session()
        if self.turn_judge is not None:
            self.turn_judge.close()
        self.text_reader.close()
        if self._owns_asr and self.asr is not None:
            self.asr.close()  # a worker process and its reader thread end here

    # --- internals -------------------------------------------------------------------
    def _update_auto_start(self) -> None:
        if not self._enabled:
            self.endpointer.auto_start = False
        elif self.mode == ListenMode.ALWAYS or (self.mode == ListenMode.WAKEWORD and self._wake_word_waived):
            self.endpointer.auto_start = True
        elif self.mode == ListenMode.WAKEWORD and self._follow_up_until is not None:
            if self.now < self._follow_up_until:
                self.endpointer.auto_start = True
            else:
                self._follow_up_until = None
                self.endpointer.auto_start = False
        else:
            self.endpointer.auto_start = False

    def _open_turn(self, events: list[HearingEvent], *, pre_roll: bool, timeout_s: float | None,
                   settle_ms: float = 0.0, end_on_silence: bool = True) -> None:
        step = self.endpointer.start_turn(
            pre_roll=pre_roll,
            no_speech_timeout_ms=None if timeout_s is None else timeout_s * 1000,
            settle_ms=settle_ms,
            end_on_silence=end_on_silence,
        )
        self._begin_session()
        self._handle(step, events)

    def _begin_session(self) -> None:
        if self.asr is not None and self.streaming and self._session is None and not self._pieces:
            self._session = self.asr.start()
            self._session_at = self._turn_fed

    def _cancel_session(self) -> None:
        if self._session is not None:
            self._session.cancel()
            self._session = None
        self._forget_turn()

    def _forget_turn(self) -> None:
        self._early_unannounced = False
        self._turn_fed = 0
        self._session_at = 0
        self._pieces = []
        self._held = []

    def _handle(self, step: EndpointStep, events: list[HearingEvent]) -> None:
        for event in step.events:
            if isinstance(event, SpeechStarted):
                events.append(replace(event, start_s=self.origin_s + event.start_s,
                                      detected_s=self.origin_s + event.detected_s))
                self._follow_up_until = None  # a follow-up window admits one turn
                self._begin_session()
        audio = step.turn_audio
        if len(audio):
            self._turn_fed += len(audio)
            if self._session is None and self._pieces and self._speaking_again():
                self._resume(len(audio), events)
            elif self._session is not None:
                self._accept(audio, events)
        asked, answer = False, None
        if step.check is not None and self.turn_judge is not None:
            ahead = False
            if self._ahead is not None:
                ahead, answer = self._ahead.at_check(self.endpointer, step.check.ticket)
            if not ahead:
                self.turn_judge.ask(step.check.ticket, self.endpointer.turn_tail(WINDOW_SAMPLES))
            asked = True
        ended = False
        for event in step.events:
            if isinstance(event, TurnEnd):
                self._end(event, events)
                ended = True
        if ended:
            return
        if self._early_decode_due() or (asked and self._early_final_possible()):
            # Asked the model: it may end the turn as soon as it answers, so the final
            # pass starts now too, or it would start only then and be on the path.
            self._decode_early()
        if self._early_unannounced and (asked or self.endpointer.pause_ms >= self.early_final_ms):
            self._announce_early(events)
        if self._ahead is not None:
            self._ahead.step(self.endpointer, self._window_samples)
        if answer is not None and step.check is not None:  # asked ahead, answered by the check
            self._handle(self.endpointer.verdict(step.check.ticket, answer), events)

    def _accept(self, audio: Pcm, events: list[HearingEvent]) -> None:
        """Turn audio to the recognizer, unless :attr:`hold_recognition` keeps it: while
        the device speaks and a barge-in is being decided, decoding would delay that
        decision (pocketsphinx decodes free-form speech at ~0.5x real time, holding the
        GIL: the 300 ms pre-roll and the first words cost the front-end thread ~230 ms
        right when the barge-in detector needs its next windows). What was held is
        decoded first once the hold lifts, and always before a final."""
        assert self._session is not None
        if self.hold_recognition:
            self._held.append(audio)
            return
        if self._held:
            audio = np.concatenate((*self._held, audio))
            self._held = []
        partial = self._session.accept(audio)
        if partial:
            said = " ".join(r.text for r in (p() for p, _ in self._pieces) if not r.empty)
            events.append(PartialTranscript(f"{said} {partial}" if said else partial, self.now))

    def _feed_held(self) -> None:
        """Decode what :attr:`hold_recognition` kept, hold or not: a final comes next."""
        if self._held and self._session is not None:
            self._session.accept(np.concatenate(self._held))
        self._held = []

    # --- early final -----------------------------------------------------------------
    def _early_final_possible(self) -> bool:
        return (self._session is not None and self.early_final_ms > 0 and self.asr is not None
                and not self.asr.grammar and not self.hold_recognition)

    def _early_decode_due(self) -> bool:
        """The pause reached ``early_decode_ms`` (``early_final_ms`` when that is sooner or
        the decode-ahead is off): the early final's decode starts."""
        start_ms = self.early_final_ms
        if 0 < self.early_decode_ms < start_ms:
            start_ms = self.early_decode_ms
        return self._early_final_possible() and self.endpointer.pause_ms >= start_ms

    def _decode_early(self) -> None:
        """Run the final pass now, while the turn's closing silence runs, and keep the
        result for the turn's end. Its words are handed over (:meth:`_announce_early`) once
        the pause reaches ``early_final_ms``: starting the decode sooner takes its time off
        the path to the reply without sending the agent a request on every shorter pause
        (a pause the person ends before then costs only the decode)."""
        assert self._session is not None
        self._feed_held()
        self._pieces.append((self._session.finish_soon(), self._session_at))
        self._session = None
        self._paused_from = self._turn_fed - self.endpointer.settings.samples(self.endpointer.pause_ms)
        self._early_unannounced = True

    def _announce_early(self, events: list[HearingEvent]) -> None:
        """The pause reached ``early_final_ms`` (or the model was asked): hand over what the
        turn says if it ends now (:class:`EarlyTranscript`), and start the text hold."""
        self._early_unannounced = False
        settings, pause_ms = self.endpointer.settings, self.endpointer.pause_ms
        assert self.asr is not None
        # what the turn says if no speech follows (read off this thread: a copy)
        transcript, hold = self._later_result(), settings.hold_silence_ms > 0
        # this pause ends the turn no sooner than the short silence, or the model's check
        soonest_ms = settings.end_silence_ms
        if self.turn_judge is not None and settings.turn_check_ms > 0:
            soonest_ms = min(settings.turn_check_ms, soonest_ms)
        paused_s = self.now - pause_ms / 1000.0  # the pause's start, on the audio clock
        events.append(EarlyTranscript(self.now, transcript, hold, paused_s + soonest_ms / 1000.0))
        if hold:
            pause = self.endpointer.pause
            self.endpointer.await_text(pause)
            self.text_reader.ask(pause, transcript)

    def _speaking_again(self) -> bool:
        return self.endpointer.state == EndpointState.SPEECH and self.endpointer.pause_ms == 0

    def _resume(self, new_samples: int, events: list[HearingEvent]) -> None:
        """Speech after an early final: a new session from the pre-roll before it (not into
        what the finished piece heard), or over the whole turn if the ASR ``hears_whole_turn``."""
        assert self.asr is not None
        settings = self.endpointer.settings
        pre_roll = min(settings.samples(settings.pre_roll_ms), self._turn_fed - self._paused_from)
        if self.asr.hears_whole_turn:
            self._pieces, pre_roll = [], self._turn_fed
        tail = self.endpointer.turn_tail(max(new_samples, pre_roll))
        self._session = self.asr.start()
        self._session_at = self._turn_fed - len(tail)
        if self._early_unannounced:  # nothing was handed over: nothing to take back
            self._early_unannounced = False
        else:
            events.append(SpeechResumed(self.now))
        self._accept(tail, events)

    def _later_result(self) -> Callable[[], AsrResult]:
        """The pieces of the turn as one result (word times from the turn's audio start), to
        be read later: a copy of the pieces (the turn goes on, or is forgotten, meanwhile)."""
        assert self.asr is not None
        return partial(_joined, list(self._pieces), self.endpointer.settings.sample_rate,
                       self.asr.low_confidence, self._turn_fed)

    def _end(self, end: TurnEnd, events: list[HearingEvent]) -> None:
        t = self.origin_s
        if end.reason == EndReason.NO_SPEECH:
            self._cancel_session()
            events.append(TurnDiscarded("no_speech", t + end.detected_s))
            self._update_auto_start()
            return
        events.append(SpeechStopped(t + end.end_s, str(end.reason), t + end.detected_s,
                                    t + end.audio_start_s, end.audio))
        if self.asr is None:
            self._forget_turn()
            return
        if self._session is not None:
            self._feed_held()
            finished = self._session.finish_soon() if self.defer_final else _ready(self._session.finish())
            self._pieces.append((finished, self._session_at))
            self._session = None
        elif not self._pieces:  # not streaming: the whole turn now
            self._pieces.append((_ready(self.asr.transcribe(end.audio)), 0))
        if self.defer_final:
            resolve = partial(_final_events, self._later_result(), t, end)
            events.append(FinalPending(t + end.detected_s, resolve))
            self._forget_turn()
            self._update_auto_start()
            return
        final = _final_events(self._later_result(), t, end)
        self._forget_turn()
        events.extend(final)
        if isinstance(final[0], FinalTranscript):
            # In wakeword mode the next turn needs the wake word again (or a follow-up window).
            self._update_auto_start()


def _final_events(result: Callable[[], AsrResult], t: float, end: TurnEnd) -> list[HearingEvent]:
    """What a turn's end reports once its words are known (``t``: the listener's origin)."""
    heard = result()
    if heard.empty:
        return [TurnDiscarded("no_words", t + end.detected_s)]
    shifted = heard.shifted(t + end.audio_start_s)
    start = t + (end.start_s if end.start_s is not None else end.audio_start_s)
    return [FinalTranscript(shifted.text, shifted.words, shifted.low_confidence, start, t + end.end_s,
                            shifted.confidence)]


def _joined(pieces: list[tuple[Callable[[], AsrResult], int]], rate: int, low_confidence: float,
            samples: int) -> AsrResult:
    """A turn's pieces (each with the turn sample it starts at) as one result."""
    if len(pieces) == 1 and pieces[0][1] == 0:
        return pieces[0][0]()
    results = [piece().shifted(at / rate) for piece, at in pieces]
    said = [r for r in results if not r.empty]
    return make_result(" ".join(r.text for r in said), [w for r in results for w in r.words],
                       low_confidence, samples, end_mark=said[-1].end_mark if said else "",
                       next_words=said[-1].next_words if said else ())


def _ready(result: AsrResult) -> Callable[[], AsrResult]:
    return lambda: result
