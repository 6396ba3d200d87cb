"""The conversation state machine: pure, no clock, no I/O.

States are what the device is doing; inputs are what happened; the transition
says the next state and what the conversation must do about it. The runtime
(:mod:`.conversation`) feeds inputs and carries out the actions; this module is
tested exhaustively (every input in every state).

    idle ──speech/wake/press──► listening ──turn with words──► thinking
     ▲  ◄──turn without words──┘                                 │ first audio
     │                                                           ▼
     └────────────────── reply done / failed ◄──────────────── speaking
    barge-in or button press while thinking/speaking: the reply is cancelled;
    speech → listening (the interrupting words are the next turn), press → idle
    (or listening in push-to-talk). mute from anywhere → muted (reply cancelled).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from edgevoice.audio.hearing.modes import ListenMode


class State(StrEnum):
    IDLE = "idle"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"
    MUTED = "muted"


class Input(StrEnum):
    SPEECH_STARTED = "speech_started"  # VAD onset, when the listen mode accepts it
    WAKE_WORD = "wake_word"
    BUTTON_PRESS = "button_press"
    BUTTON_RELEASE = "button_release"
    BUTTON_HOLD = "button_hold"  # long hold: reset the session
    TURN_FINAL = "turn_final"  # end of turn with words: send it
    TURN_DISCARDED = "turn_discarded"  # end of turn without words, or turn abandoned
    REPLY_AUDIO_STARTED = "reply_audio_started"  # first sample of the reply played
    REPLY_DONE = "reply_done"
    REPLY_FAILED = "reply_failed"
    BARGE_IN = "barge_in"  # the person talked over the reply (detector said so)
    MUTE = "mute"
    UNMUTE = "unmute"
    RESET = "reset"  # voice "start over", MQTT reset_session, idle timeout
    SAY = "say"  # speak a text that is not a reply to a turn (MQTT `say`)


class Action(StrEnum):
    START_TURN = "start_turn"  # begin collecting the user's turn (keep pre-roll)
    STOP_TURN = "stop_turn"  # push-to-talk released: end the turn now
    ABANDON_TURN = "abandon_turn"  # drop a half-collected turn
    SEND_TURN = "send_turn"  # start the reply task for the finished turn
    CANCEL_REPLY = "cancel_reply"  # cancel agent request + TTS, drop the speaker queue
    START_SAY = "start_say"  # start a reply task speaking a given text
    RESET_SESSION = "reset_session"
    EARCON_WAKE = "earcon_wake"
    EARCON_ERROR = "earcon_error"
    EARCON_RESET = "earcon_reset"


@dataclass(frozen=True, slots=True)
class Context:
    """What the transition needs to know beyond the state."""

    mode: ListenMode = ListenMode.ALWAYS
    # wakeword mode: a follow-up window after a reply accepts speech without the wake word.
    in_follow_up: bool = False
    # button mode: hold to talk (release ends the turn) rather than press to start.
    push_to_talk: bool = True


@dataclass(frozen=True, slots=True)
class Transition:
    state: State
    actions: tuple[Action, ...] = ()
    # True when the input meant nothing in this state (kept for logs and tests).
    ignored: bool = False


def _stay(state: State) -> Transition:
    return Transition(state, (), ignored=True)


def _speech_opens_turn(ctx: Context) -> bool:
    if ctx.mode is ListenMode.ALWAYS:
        return True
    if ctx.mode is ListenMode.WAKEWORD:
        return ctx.in_follow_up
    return False


def transition(state: State, event: Input, ctx: Context = Context()) -> Transition:
    """The next state and the actions for ``event`` in ``state``."""
    # Inputs that mean the same in every state come first.
    if event is Input.MUTE:
        if state is State.MUTED:
            return _stay(state)
        actions: tuple[Action, ...] = ()
        if state in (State.THINKING, State.SPEAKING):
            actions = (Action.CANCEL_REPLY,)
        elif state is State.LISTENING:
            actions = (Action.ABANDON_TURN,)
        return Transition(State.MUTED, actions)
    if event is Input.UNMUTE:
        return Transition(State.IDLE) if state is State.MUTED else _stay(state)
    if event in (Input.RESET, Input.BUTTON_HOLD):
        if state is State.MUTED:
            return Transition(State.MUTED, (Action.RESET_SESSION,))
        actions = {
            State.IDLE: (),
            State.LISTENING: (Action.ABANDON_TURN,),
            State.THINKING: (Action.CANCEL_REPLY,),
            State.SPEAKING: (Action.CANCEL_REPLY,),
        }[state]
        return Transition(State.IDLE, (*actions, Action.RESET_SESSION, Action.EARCON_RESET))
    if state is State.MUTED:
        return _stay(state)

    if state is State.IDLE:
        if event is Input.SPEECH_STARTED and _speech_opens_turn(ctx):
            return Transition(State.LISTENING, (Action.START_TURN,))
        if event is Input.WAKE_WORD and ctx.mode is ListenMode.WAKEWORD:
            return Transition(State.LISTENING, (Action.EARCON_WAKE, Action.START_TURN))
        if event is Input.BUTTON_PRESS:
            return Transition(State.LISTENING, (Action.EARCON_WAKE, Action.START_TURN))
        if event is Input.SAY:
            return Transition(State.THINKING, (Action.START_SAY,))
        return _stay(state)

    if state is State.LISTENING:
        if event is Input.TURN_FINAL:
            return Transition(State.THINKING, (Action.SEND_TURN,))
        if event is Input.TURN_DISCARDED:
            return Transition(State.IDLE)
        if event is Input.BUTTON_RELEASE and ctx.mode is ListenMode.BUTTON and ctx.push_to_talk:
            return Transition(State.LISTENING, (Action.STOP_TURN,))
        if event is Input.SAY:
            return Transition(State.THINKING, (Action.ABANDON_TURN, Action.START_SAY))
        return _stay(state)

    # THINKING or SPEAKING: a reply is in flight.
    if event is Input.REPLY_AUDIO_STARTED:
        return Transition(State.SPEAKING) if state is State.THINKING else _stay(state)
    if event is Input.REPLY_DONE:
        return Transition(State.IDLE)
    if event is Input.REPLY_FAILED:
        return Transition(State.IDLE, (Action.EARCON_ERROR,))
    if event is Input.BARGE_IN:
        # The interrupting words are the next turn: nothing the person said is lost.
        return Transition(State.LISTENING, (Action.CANCEL_REPLY, Action.START_TURN))
    if event is Input.BUTTON_PRESS:
        if ctx.mode is ListenMode.BUTTON:
            return Transition(State.LISTENING, (Action.CANCEL_REPLY, Action.START_TURN))
        return Transition(State.IDLE, (Action.CANCEL_REPLY,))
    if event is Input.SAY:
        return Transition(State.THINKING, (Action.CANCEL_REPLY, Action.START_SAY))
    return _stay(state)
