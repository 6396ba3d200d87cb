"""The conversation state machine, exhaustively: every input in every state."""

from __future__ import annotations

import itertools

import pytest

from edgevoice.audio.hearing.modes import ListenMode
from edgevoice.device.runtime.state import Action, Context, Input, State, Transition, transition

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

CONTEXTS = [
    Context(mode, follow_up, ptt)
    for mode, follow_up, ptt in itertools.product(ListenMode, (False, True), (False, True))
]
ALL = list(itertools.product(State, Input, CONTEXTS))
REPLY_STATES = (State.THINKING, State.SPEAKING)


@pytest.mark.parametrize(("state", "event", "ctx"), ALL)
def test_every_input_in_every_state_has_a_defined_outcome(state: State, event: Input, ctx: Context) -> None:
    result = transition(state, event, ctx)
    assert isinstance(result, Transition)
    assert result.state in State
    assert all(a in Action for a in result.actions)
    if result.ignored:
        assert result.state is state and result.actions == ()


@pytest.mark.parametrize(("state", "event", "ctx"), ALL)
def test_a_reply_in_flight_is_cancelled_whenever_it_is_left_behind(
    state: State, event: Input, ctx: Context
) -> None:
    result = transition(state, event, ctx)
    natural_end = event in (Input.REPLY_DONE, Input.REPLY_FAILED)
    left = state in REPLY_STATES and result.state not in REPLY_STATES and not natural_end
    replaced = state in REPLY_STATES and Action.START_SAY in result.actions
    if left or replaced:
        assert Action.CANCEL_REPLY in result.actions
    else:
        assert Action.CANCEL_REPLY not in result.actions
    # Cancellation comes before anything that starts something new.
    if Action.CANCEL_REPLY in result.actions:
        assert result.actions[0] is Action.CANCEL_REPLY


@pytest.mark.parametrize(("state", "event", "ctx"), ALL)
def test_only_a_finished_turn_is_sent(state: State, event: Input, ctx: Context) -> None:
    result = transition(state, event, ctx)
    sent = Action.SEND_TURN in result.actions
    assert sent == (state is State.LISTENING and event is Input.TURN_FINAL)
    if sent:
        assert result.state is State.THINKING


@pytest.mark.parametrize(("state", "event", "ctx"), ALL)
def test_muted_device_does_nothing_but_unmute_and_reset(state: State, event: Input, ctx: Context) -> None:
    if state is not State.MUTED:
        return
    result = transition(state, event, ctx)
    if event is Input.UNMUTE:
        assert result == Transition(State.IDLE)
    elif event in (Input.RESET, Input.BUTTON_HOLD):
        assert result == Transition(State.MUTED, (Action.RESET_SESSION,))
    else:
        assert result.ignored


@pytest.mark.parametrize(("state", "ctx"), list(itertools.product(State, CONTEXTS)))
def test_mute_from_anywhere_stops_what_is_going_on(state: State, ctx: Context) -> None:
    result = transition(state, Input.MUTE, ctx)
    assert result.state is State.MUTED
    expected = {
        State.IDLE: (),
        State.LISTENING: (Action.ABANDON_TURN,),
        State.THINKING: (Action.CANCEL_REPLY,),
        State.SPEAKING: (Action.CANCEL_REPLY,),
    }
    if state is State.MUTED:
        assert result.ignored
    else:
        assert result.actions == expected[state]


@pytest.mark.parametrize(("state", "event"), list(itertools.product(State, (Input.RESET, Input.BUTTON_HOLD))))
def test_reset_rotates_the_session_from_every_state(state: State, event: Input) -> None:
    result = transition(state, event)
    assert Action.RESET_SESSION in result.actions
    assert result.state is (State.MUTED if state is State.MUTED else State.IDLE)


def test_speech_opens_a_turn_only_where_the_listen_mode_allows() -> None:
    always = Context(ListenMode.ALWAYS)
    wake = Context(ListenMode.WAKEWORD)
    follow_up = Context(ListenMode.WAKEWORD, in_follow_up=True)
    button = Context(ListenMode.BUTTON)
    assert transition(State.IDLE, Input.SPEECH_STARTED, always) == Transition(
        State.LISTENING, (Action.START_TURN,)
    )
    assert transition(State.IDLE, Input.SPEECH_STARTED, wake).ignored
    assert transition(State.IDLE, Input.SPEECH_STARTED, follow_up).state is State.LISTENING
    assert transition(State.IDLE, Input.SPEECH_STARTED, button).ignored
    assert transition(State.IDLE, Input.WAKE_WORD, wake) == Transition(
        State.LISTENING, (Action.EARCON_WAKE, Action.START_TURN)
    )
    assert transition(State.IDLE, Input.WAKE_WORD, always).ignored


def test_a_full_turn_and_a_barge_in() -> None:
    ctx = Context(ListenMode.ALWAYS)
    state = State.IDLE
    steps = [
        (Input.SPEECH_STARTED, State.LISTENING, (Action.START_TURN,)),
        (Input.TURN_FINAL, State.THINKING, (Action.SEND_TURN,)),
        (Input.REPLY_AUDIO_STARTED, State.SPEAKING, ()),
        (Input.BARGE_IN, State.LISTENING, (Action.CANCEL_REPLY, Action.START_TURN)),
        (Input.TURN_FINAL, State.THINKING, (Action.SEND_TURN,)),
        (Input.REPLY_FAILED, State.IDLE, (Action.EARCON_ERROR,)),
    ]
    for event, expected_state, expected_actions in steps:
        result = transition(state, event, ctx)
        assert (result.state, result.actions) == (expected_state, expected_actions), event
        state = result.state


def test_button_interrupts_like_a_barge_in_and_push_to_talk_release_ends_the_turn() -> None:
    assert transition(State.SPEAKING, Input.BUTTON_PRESS, Context(ListenMode.ALWAYS)) == Transition(
        State.IDLE, (Action.CANCEL_REPLY,)
    )
    ptt = Context(ListenMode.BUTTON, push_to_talk=True)
    assert transition(State.SPEAKING, Input.BUTTON_PRESS, ptt) == Transition(
        State.LISTENING, (Action.CANCEL_REPLY, Action.START_TURN)
    )
    assert transition(State.LISTENING, Input.BUTTON_RELEASE, ptt).actions == (Action.STOP_TURN,)
    press_mode = Context(ListenMode.BUTTON, push_to_talk=False)
    assert transition(State.LISTENING, Input.BUTTON_RELEASE, press_mode).ignored


def test_speech_while_speaking_is_not_a_barge_in_by_itself() -> None:
    # Only the barge-in detector (speech sustained above the residual echo) interrupts:
    # the device never interrupts itself on a bare VAD onset during its own reply.
    for ctx in CONTEXTS:
        assert transition(State.SPEAKING, Input.SPEECH_STARTED, ctx).ignored
        assert transition(State.THINKING, Input.SPEECH_STARTED, ctx).ignored
