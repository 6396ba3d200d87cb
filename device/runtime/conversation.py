"""The conversation: hearing, the agent and speaking tied together by the state machine.

Frames from the duplex loop go through the front end (echo canceller, VAD,
endpointer, wake word, ASR) on its own thread; what it heard comes back here, on
the event loop, and becomes inputs of the pure state machine
(:mod:`.state`). Its actions are carried out here: a finished turn starts one
reply task (agent request → sentence splitter → TTS → speaker); a barge-in, a
button press, a mute or a reset cancels that task, and nothing of it survives —
no late sentence, no orphaned request. What the person heard of an interrupted
reply is what the agent's history keeps and what the next request carries as
``interrupted_text``.

Turns that start while the device is talking are candidates: the barge-in
detector, fed the VAD's probabilities on the echo-cancelled signal, decides
whether they are a person (the reply stops, and their words — pre-roll included —
become the next turn) or the device's own echo (ignored).
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Any

from edgevoice.audio.hearing.endpoint import SpeechStarted
from edgevoice.audio.hearing.events import (
    FinalTranscript,
    HearingEvent,
    PartialTranscript,
    SpeechStopped,
    TurnDiscarded,
    WakeWordDetected,
)
from edgevoice.audio.hearing.modes import ListenMode
from edgevoice.audio.speaking.earcons import Earcon, Earcons
from edgevoice.audio.speaking.playback import Speaker
from edgevoice.audio.speaking.tts import TtsAudio
from edgevoice.device.agents import AgentClient, UserTurn
from edgevoice.device.events import EventBus, EventType
from edgevoice.device.knowledge import KnowledgeBase
from edgevoice.device.runtime import inputs, sources
from edgevoice.device.runtime.bargein import BargeInMonitor
from edgevoice.device.runtime.controls import control_of
from edgevoice.device.runtime.frontend import FrameSource, FrontEnd, FrontEndThread, FrontResult
from edgevoice.device.runtime.idle import IdleReset
from edgevoice.device.runtime.idle import watch as watch_idle
from edgevoice.device.runtime.inputs import StateInput, onset_of
from edgevoice.device.runtime.metrics import Mark, TurnTimeline
from edgevoice.device.runtime.reports import FrameFailures, TurnReports
from edgevoice.device.runtime.speculation import Speculator
from edgevoice.device.runtime.state import Action, Context, State, transition
from edgevoice.device.runtime.tasks import AudioClock, cancel_task
from edgevoice.device.runtime.turns import (
    LATE_TURN_AFTER_REPLY_S,
    ConversationSettings,
    Counters,
    RemotePipeline,
    Turn,
    new_id,
    once,
    remaining_text,
)
from edgevoice.device.speaking.reply import ReplyOutcome, ReplySpeaker, ReplyStatus

_LOGGER = logging.getLogger(__name__)

class Conversation:
    def __init__(
        self,
        *,
        bus: EventBus,
        front: FrontEnd,
        speaker: Speaker,
        replies: ReplySpeaker,
        agent: AgentClient,
        earcons: Earcons,
        barge_in: BargeInMonitor,
        settings: ConversationSettings,
        clock: AudioClock,
        on_state: Callable[[State], None] | None = None,
        knowledge: KnowledgeBase | None = None,
    ) -> None:
        self.bus = bus
        self.knowledge = knowledge
        self.front = front
        self.speaker = speaker
        self.replies = replies
        self.agent = agent
        self.earcons = earcons
        self.barge_in = barge_in
        front.barge_in = barge_in  # the front-end thread owns the detector from here on
        self.settings = settings
        self.on_state = on_state
        self.state = State.IDLE
        self._in_reply = False
        self._reply_since_s = 0.0  # audio clock: when the device last began a reply
        self.clock = clock
        self.counters = Counters()
        self.speculation = Speculator(self)  # a reply prepared in the silence that ends a turn
        self.reports = TurnReports(bus, clock, on_finish=self.speculation.learn)
        self._worker: FrontEndThread | None = None  # its last result: telemetry's levels
        self._lock = asyncio.Lock()
        self._turn: Turn | None = None  # the turn being heard (or the candidate)
        self._reply_turn: Turn | None = None  # the turn whose reply is in flight
        self._reply_task: asyncio.Task[None] | None = None
        self._interrupted: ReplyOutcome | None = None
        self._end_after_reply = False
        self._reply_ended_at: float | None = None
        self._idle = IdleReset(time.monotonic())
        self._frame_failed = FrameFailures(bus)
        self._background: set[asyncio.Task[Any]] = set()
        # Turns the device takes before the controls and the agent (a ringing timer's
        # "stop"): text -> what to say ("" nothing), or None to pass the turn on.
        self.intercept: Callable[[str], str | None] | None = None
        # Wake-word arbitration: asked on each wake word heard while idle; False means
        # another device of the room answers, and this one stands down without a sound.
        self.arbiter: Callable[[WakeWordDetected], Awaitable[bool]] | None = None
        self._stood_down = False  # ignore the abandoned turn's events until it is discarded
        self.remote: RemotePipeline | None = None

    # --- the loop -----------------------------------------------------------------------

    async def run(self, duplex: FrameSource) -> None:
        """Hear the duplex loop's frames until they end (or the task is cancelled).

        The front end takes frames from the audio thread itself, in batches, on its own
        thread (:class:`FrontEndThread`), and wakes the event loop only when it heard
        something (an event, a barge-in): an idle listening device costs the loop nothing
        per period.
        """
        worker = FrontEndThread(self.front, duplex, asyncio.get_running_loop(), tick=self.clock.tick,
                                in_reply=lambda: self._in_reply, playing=self.replies.speaker.is_playing,
                                on_failure=self._frame_failed)
        self._worker = worker
        idle = asyncio.create_task(
            watch_idle(self._idle, self.settings.session_idle_reset_s, may_reset=self._may_reset,
                       reset=lambda: self.reset(quiet=True)), name="conversation-idle-reset")
        worker.start()
        try:
            while (result := await worker.results.get()) is not None:
                try:
                    await self._on_front(result)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    self._frame_failed(result.index, traceback.format_exc())
        finally:
            worker.stop()
            await cancel_task(idle)
            await asyncio.to_thread(worker.join, 5.0)

    async def close(self) -> None:
        async with self._lock:
            await self._cancel_reply(reason="shutdown")
            await self.speculation.close()
        for task in list(self._background):
            await cancel_task(task)
        self.front.close()

    def context(self, *, listener_opened: bool = False) -> Context:
        # In wake word mode the listener only starts a turn on its own inside a follow-up
        # window (after the wake word it opens the turn and we are already listening).
        return Context(self.settings.mode, listener_opened, self.settings.push_to_talk)

    # --- inputs from outside (button, MQTT, agent tools) ------------------------------------

    async def button_pressed(self) -> None:
        if self.settings.mode is ListenMode.BUTTON:
            self.front.control(lambda listener: listener.button_pressed())
        elif self.state is State.IDLE:
            self.front.control(lambda listener: listener.start_turn_now())
        await self.feed(inputs.ButtonPressed(self.clock.now()))

    async def button_released(self) -> None:
        await self.feed(inputs.ButtonReleased())

    async def reset(self, *, quiet: bool = False) -> None:
        await self.feed(inputs.ResetAsked(quiet))

    async def set_muted(self, muted: bool) -> None:
        await self.feed(inputs.MuteSet(muted))

    @property
    def muted(self) -> bool:
        return self.state is State.MUTED

    async def interrupt(self) -> bool:
        """Stop the reply in flight, as a button press would. Returns whether one was."""
        if self.state not in (State.THINKING, State.SPEAKING):
            return False
        async with self._lock:
            await self._interrupt(onset=self.clock.now(), reason="command")
            self._set_state(State.IDLE)
        return True

    def end_after_reply(self) -> None:
        """The person ended the conversation ("stop", "goodbye"): after this reply the
        device waits for the wake word again instead of opening a follow-up window."""
        self._end_after_reply = True

    async def say(self, text: str) -> None:
        """Speak ``text`` now (not a reply to a turn): MQTT ``say``, greetings, failures."""
        await self.feed(inputs.SayAsked(text))

    async def announce(self, audio: AsyncIterable[TtsAudio], text: str, utterance_id: str) -> None:
        """Play ``audio`` now, as :meth:`say` speaks (an announcement Home Assistant sent);
        ``reply.done`` for ``utterance_id`` says how it ended."""
        await self.feed(inputs.SayAsked(text, audio, utterance_id))

    async def listen(self) -> None:
        """Open a turn now, without the wake word (a conversation HA continues or starts)."""
        if self.state is State.IDLE:
            self.front.control(lambda listener: listener.start_turn_now())
            await self.feed(inputs.ButtonPressed(self.clock.now()))

    def end_turn(self) -> None:
        """End the turn being heard now (the remote recognizer heard the speech end)."""
        self.front.control(lambda listener: listener.end_turn_now())

    def waive_wake_word(self, waived: bool) -> None:
        """Speech needs no wake word while ``waived`` (a ringing timer's "stop")."""
        self.front.run_on_thread(lambda: self.front.listener.waive_wake_word(waived))

    # --- the state machine ----------------------------------------------------------------

    async def feed(self, happened: StateInput) -> None:
        async with self._lock:
            await self._feed_locked(happened)

    async def _feed_locked(self, happened: StateInput) -> None:
        event = happened.kind
        # Speech is fed only once the listener opened the turn itself (follow-up window).
        opened = isinstance(happened, inputs.SpeechHeard)
        result = transition(self.state, event, self.context(listener_opened=opened))
        if result.ignored:
            _LOGGER.debug("%s ignored in %s", event, self.state)
            return
        previous = self.state
        for action in result.actions:
            await self._act(action, happened)
        self._set_state(result.state)
        if previous is not result.state:
            _LOGGER.debug("%s: %s -> %s", event, previous, result.state)

    def _set_state(self, state: State) -> None:
        if state is self.state:
            return
        previous, self.state = self.state, state
        self.speculation.state_changed(state)
        in_reply = state in (State.THINKING, State.SPEAKING)
        if in_reply and not self._in_reply:
            self._reply_since_s = self.clock.now()
        # Read by the front-end thread (a plain attribute: one atomic store).
        self._in_reply = in_reply
        self._idle.set_busy(state in (State.LISTENING, State.THINKING, State.SPEAKING), time.monotonic())
        if state is State.MUTED:
            self.front.control(lambda listener: listener.set_enabled(False))
        elif previous is State.MUTED:
            self.front.control(lambda listener: listener.set_enabled(True))
        self.bus.emit(EventType.STATE_CHANGED, state=str(state), previous=str(previous))
        if self.on_state is not None:
            self.on_state(state)

    async def _act(self, action: Action, happened: StateInput) -> None:
        onset = onset_of(happened)
        quiet = isinstance(happened, inputs.ResetAsked) and happened.quiet
        if action is Action.START_TURN:
            if isinstance(happened, inputs.BargedIn) and self._turn is not None:
                self._remote_turn_started(self._turn, happened)
                return  # the candidate turn that interrupted becomes the turn
            self._turn = Turn(TurnTimeline(new_id("turn")))
            if onset is not None:
                self._turn.timeline.mark(Mark.SPEECH_STARTED, onset)
            self._remote_turn_started(self._turn, happened)
        elif action is Action.SEND_TURN:
            turn = self._turn
            assert turn is not None and isinstance(happened, inputs.TurnFinished)
            self._turn = None
            self._start_reply(turn, happened.final)
        elif action is Action.CANCEL_REPLY:
            onset = self.clock.now() if onset is None else onset
            await self._interrupt(onset=onset, reason=str(happened.kind))
        elif action is Action.ABANDON_TURN:
            self._turn = None
            self.front.control(lambda listener: listener.set_enabled(False) + listener.set_enabled(True))
        elif action is Action.STOP_TURN:
            self.front.control(lambda listener: listener.button_released())
        elif action is Action.START_SAY:
            assert isinstance(happened, inputs.SayAsked)
            self._start_say(happened.text, happened.audio, happened.utterance_id)
        elif action is Action.RESET_SESSION:
            self.agent.reset_session()
            self._interrupted = None
            self.bus.emit(EventType.SESSION_RESET, session_id=self.agent.session_id,
                          reason=str(happened.kind))
        elif action is Action.EARCON_WAKE:
            self.earcons.play(Earcon.WAKE)
        elif action is Action.EARCON_ERROR:
            self.earcons.play(Earcon.ERROR)
        elif action is Action.EARCON_RESET and not quiet:
            self.earcons.play(Earcon.RESET)
        self._idle.activity(time.monotonic())

    # --- what the front end heard -----------------------------------------------------------

    async def _on_front(self, result: FrontResult) -> None:
        for event in result.events:
            await self._on_hearing(event)
        if result.barge_in is not None:
            await self._take_barge_in(result.barge_in.onset_s, result.end_s)

    async def _on_hearing(self, event: HearingEvent) -> None:
        if self.speculation.heard(event):
            return
        if self._stood_down and not isinstance(event, WakeWordDetected):
            self._stood_down = not isinstance(event, TurnDiscarded)
            return
        if isinstance(event, SpeechStarted | SpeechStopped) and not self._in_reply:
            self._idle.activity(time.monotonic())  # the person's speech, not the device's echo
        if not isinstance(event, (FinalTranscript, TurnDiscarded, PartialTranscript)):
            self.bus.announce(event)  # as the listener made it; the others wait for the turn
        if isinstance(event, SpeechStarted):
            if self.state in (State.THINKING, State.SPEAKING):
                self._turn = Turn(TurnTimeline(new_id("turn")), accepted=False)
                self._turn.timeline.mark(Mark.SPEECH_STARTED, event.start_s)
            elif self.state is State.LISTENING and self._turn is not None:
                self._turn.timeline.mark(Mark.SPEECH_STARTED, event.start_s)
            else:
                await self.feed(inputs.SpeechHeard(event.start_s))
        elif isinstance(event, SpeechStopped):
            if self._turn is not None:
                self._turn.timeline.mark(Mark.SPEECH_END, event.t)
                self._turn.timeline.mark(Mark.ENDPOINT, event.detected)
        elif isinstance(event, WakeWordDetected):  # announced above, once, as the listener made it
            if self.arbiter is not None and self.state is State.IDLE and not await self.arbiter(event):
                # Another device answers: drop the turn the listener opened, silently.
                self._stood_down = True
                self.front.control(lambda listener: listener.set_enabled(False) + listener.set_enabled(True))
                return
            await self.feed(inputs.WakeWordHeard(event.name))
        elif isinstance(event, PartialTranscript):
            turn = self._turn
            if turn is not None and turn.accepted:
                self.bus.announce(event)
        elif isinstance(event, FinalTranscript):
            await self._on_final(event)
        elif isinstance(event, TurnDiscarded):
            await self._on_discarded(event)

    async def _on_final(self, final: FinalTranscript) -> None:
        turn = self._turn
        if turn is None:
            return
        if not turn.accepted:
            # Began while the device spoke and was never confirmed as a barge-in: it is the
            # person's turn only if they went on talking after the reply had ended.
            ended = self._reply_ended_at
            if self.state in (State.THINKING, State.SPEAKING) or ended is None or (
                final.end - ended < LATE_TURN_AFTER_REPLY_S
            ):
                _LOGGER.debug("ignoring %d words heard while speaking (echo or backchannel)",
                              len(final.words))
                self._turn = None
                return
            turn.accepted = True
            await self.feed(inputs.SpeechHeard(final.start))
            if self._turn is not turn and self._turn is not None:
                self._turn.timeline.marks.update(turn.timeline.marks)
                turn = self._turn
        if turn.barge_in:
            heard = len(final.words)
            self.front.run_on_thread(lambda: self.barge_in.turn_finished(heard))
        turn.text = final.text
        turn.timeline.mark(Mark.ASR_FINAL, self.clock.now())
        self.counters.turns += 1
        self.bus.announce(final)
        if self.settings.log_transcripts:
            _LOGGER.info("user said: %s", final.text)
        await self.feed(inputs.TurnFinished(final))

    async def _on_discarded(self, discarded: TurnDiscarded) -> None:
        turn = self._turn
        if turn is None:
            return
        self._turn = None
        if not turn.accepted:
            return
        remote = self.remote
        if (remote is not None and remote.active and discarded.reason == "no_words"
                and remote.handles(turn.timeline.turn_id)):
            # Home Assistant recognizes the words: a turn our recognizer found empty is
            # still its to answer.
            self._turn = turn
            await self._on_final(FinalTranscript("", (), True, discarded.t, discarded.t, 0.0))
            return
        if self.remote is not None:
            self.remote.turn_abandoned(turn.timeline.turn_id)
        self.counters.discarded += 1
        self.bus.announce(discarded)
        await self.feed(inputs.TurnDropped())
        if turn.barge_in:
            self.counters.false_barge_ins += 1
            self.front.run_on_thread(lambda: self.barge_in.turn_finished(0))
            if self.barge_in.detector.settings.resume_after_false_barge_in:
                await self._resume_after_false_barge_in()

    async def _take_barge_in(self, onset_s: float, frame_s: float | None = None) -> None:
        if self.state not in (State.THINKING, State.SPEAKING):
            return
        if frame_s is not None and frame_s < self._reply_since_s:
            # Decided on audio from before this reply began (the front end runs behind the
            # audio clock under load): the person's last turn, not someone talking over it.
            _LOGGER.info("barge-in on audio from before the reply (%.2f s): ignored", frame_s)
            self.front.run_on_thread(self.barge_in.reset)
            return
        turn = self._turn
        if turn is None or turn.accepted:
            # The VAD heard a person but the listener has no turn open (wake word mode
            # while speaking): open one from the onset, pre-roll included.
            turn = Turn(TurnTimeline(new_id("turn")))
            turn.timeline.mark(Mark.SPEECH_STARTED, onset_s)
            self._turn = turn
            self.front.control(lambda listener: listener.start_turn_now())
        turn.accepted = True
        turn.barge_in = True
        self.counters.barge_ins += 1
        now = self.clock.now()
        # frame_s: the end of the frame the detector decided on; detected_s - frame_s is
        # how far the front end ran behind the audio clock at that moment
        self.bus.emit(EventType.BARGE_IN, onset_s=round(onset_s, 3), detected_s=round(now, 3),
                      frame_s=round(now if frame_s is None else frame_s, 3))
        await self.feed(inputs.BargedIn(onset_s))

    async def _resume_after_false_barge_in(self) -> None:
        interrupted = self._interrupted
        if interrupted is None:
            return
        rest = remaining_text(interrupted.text, interrupted.heard_text)
        if rest:
            _LOGGER.info("false barge-in (no words): resuming the interrupted reply")
            await self.say(rest)

    # --- replies ---------------------------------------------------------------------------

    def _remote_active(self) -> bool:
        return self.remote is not None and self.remote.active

    def _remote_turn_started(self, turn: Turn, happened: StateInput) -> None:
        if self.remote is not None and self.remote.active:
            wake_word = happened.wake_word if isinstance(happened, inputs.WakeWordHeard) else None
            self.remote.turn_started(turn.timeline.turn_id, wake_word=wake_word, onset_s=onset_of(happened))

    def _start_reply(self, turn: Turn, final: FinalTranscript) -> None:
        user = UserTurn(text=final.text, low_confidence=final.low_confidence)
        self.front.run_on_thread(self.barge_in.reset)
        self._reply_turn = turn
        self._reply_ended_at = None
        self._interrupted = None
        taken = self.intercept(final.text) if self.intercept is not None else None
        remote = self.remote
        if taken is None and remote is not None and remote.handles(turn.timeline.turn_id):
            # Home Assistant's pipeline answers (a ringing timer's "stop" was taken above).
            turn.remote = True
            turn.timeline.mark(Mark.REQUEST_SENT, self.clock.now())
            self._reply_task = asyncio.create_task(
                self._run_reply(turn, remote.reply(turn.timeline.turn_id, final.text), record=False,
                                audio=True),
                name=f"reply-{turn.timeline.turn_id}")
            return
        control = control_of(final.text) if taken is None else None
        if taken is not None or control is not None:  # handled here, never sent to the agent
            deltas = (sources.from_control(control, self.agent, bus=self.bus, silent=turn.barge_in,
                                           on_stop=self.end_after_reply)
                      if control is not None else once(taken or ""))
            self._reply_task = asyncio.create_task(
                self._run_reply(turn, deltas, record=False), name=f"control-{turn.timeline.turn_id}"
            )
            return
        spoken = self.speculation.take(turn, final, sources.from_agent(
            self.agent, user, turn.timeline, bus=self.bus, clock=self.clock, knowledge=self.knowledge))
        self._reply_task = asyncio.create_task(self._run_reply(turn, spoken),
                                               name=f"reply-{turn.timeline.turn_id}")

    def _start_say(self, text: str, audio: AsyncIterable[TtsAudio] | None = None,
                   utterance_id: str | None = None) -> None:
        turn = Turn(TurnTimeline(utterance_id or new_id("say")))
        self._reply_turn = turn
        self._reply_ended_at = None
        source: AsyncIterable[Any] = once(text) if audio is None else audio
        self._reply_task = asyncio.create_task(
            self._run_reply(turn, source, record=False, audio=audio is not None),
            name=f"say-{turn.timeline.turn_id}"
        )

    async def _run_reply(self, turn: Turn, deltas: AsyncIterable[Any], *, record: bool = True,
                         audio: bool = False) -> None:
        try:
            await self._reply(turn, deltas, record=record, audio=audio)
        except asyncio.CancelledError:
            raise
        except Exception:
            # A bug here must not leave the device stuck "thinking": fail the turn.
            _LOGGER.exception("reply %s failed unexpectedly", turn.timeline.turn_id)
            self._reply_task = None
            self.bus.emit(EventType.ERROR, source="reply", code="reply_failed",
                          message="the reply failed unexpectedly; see the log")
            await self.feed(inputs.ReplyFailed())

    async def _reply(self, turn: Turn, deltas: AsyncIterable[Any], *, record: bool,
                     audio: bool = False) -> None:
        def started() -> None:
            self._reply_audio_started(turn)

        def ended(outcome: ReplyOutcome) -> None:
            turn.outcome = outcome

        if audio:  # audio made elsewhere (Home Assistant's TTS, an announcement)
            outcome = await self.replies.play(deltas, turn.timeline.turn_id, on_started=started,
                                              on_outcome=ended)
        else:
            outcome = await self.replies.speak(deltas, turn.timeline.turn_id, on_started=started,
                                               on_outcome=ended)
        self.reports.mark_reply(turn, outcome)
        if record:
            self.agent.record_reply(heard_text=outcome.heard_text, interrupted=False)
        self._reply_ended_at = self.clock.now()
        self._reply_task = None
        self.reports.finish(turn, str(outcome.status))
        if outcome.status is ReplyStatus.FAILED:
            error = outcome.error or {"code": "reply_failed", "message": "the reply failed"}
            code = error.get("code", "reply_failed")
            self.counters.agent_errors[code] = self.counters.agent_errors.get(code, 0) + 1
            self.bus.emit(EventType.ERROR, source="reply", **error)
            await self.feed(inputs.ReplyFailed())
            if record and self.settings.failure_phrase:
                await self.say(self.settings.failure_phrase)
        else:
            await self.feed(inputs.ReplyDone())
            ending, self._end_after_reply = self._end_after_reply, False
            # HA's pipeline decides itself whether the conversation goes on (continue_conversation)
            if self.settings.mode is ListenMode.WAKEWORD and self.settings.follow_up_s > 0 and not (
                    ending or self._remote_active()):
                self.front.run_on_thread(self.front.listener.open_follow_up)

    async def _interrupt(self, *, onset: float, reason: str) -> None:
        turn = self._reply_turn
        task = self._reply_task
        self._reply_task = None
        self.speaker.drop()  # silence within one period, before anything else
        # Playback stops once what sits in the device buffer has played: that moment,
        # not the end of the reply task's cancellation (which may wait on TTS), is the stop.
        stopped = self.clock.now() + self.speaker.pending_samples() / 16000.0
        await cancel_task(task)
        outcome = turn.outcome if turn is not None else None
        if turn is None or outcome is None:
            return
        self._interrupted = outcome
        self._reply_ended_at = self.clock.now()
        if turn.timeline.turn_id.startswith("turn") and not turn.remote:
            self.agent.record_reply(heard_text=outcome.heard_text, interrupted=True)
        self.reports.mark_reply(turn, outcome)
        turn.timeline.mark(Mark.INTERRUPT_ONSET, onset)
        turn.timeline.mark(Mark.PLAYBACK_STOPPED, stopped)
        self.reports.finish(turn, "interrupted")
        _LOGGER.info("reply %s interrupted (%s)", turn.timeline.turn_id, reason)

    async def _cancel_reply(self, *, reason: str) -> None:
        if self._reply_task is not None:
            await self._interrupt(onset=self.clock.now(), reason=reason)

    def _reply_audio_started(self, turn: Turn) -> None:
        """The reply's first sample left the loudspeaker (the speaker says so, right after
        ``reply.started``): thinking → speaking."""
        if turn is self._reply_turn and self.state is State.THINKING:
            task = asyncio.ensure_future(self.feed(inputs.ReplyAudioStarted()))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _may_reset(self) -> bool:
        # in_turn: a plain read; the front-end thread writes it
        return self.state is State.IDLE and not self.front.listener.in_turn and bool(self.agent.history)

    def telemetry(self) -> dict[str, Any]:
        """What the MQTT telemetry reports from the conversation."""
        return {
            "state": str(self.state),
            "turns": self.counters.turns,
            "barge_ins": self.counters.barge_ins,
            "false_barge_ins": self.counters.false_barge_ins,
            "discarded_turns": self.counters.discarded,
            "agent_errors": dict(self.counters.agent_errors),
            "latency_ms": self.reports.percentiles.summary(),
            **(self._worker.last.levels() if self._worker is not None and self._worker.last else {}),
        }


__all__ = ["Conversation", "ConversationSettings", "RemotePipeline"]
