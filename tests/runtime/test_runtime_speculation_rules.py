"""Speculation's decisions (device/runtime/speculation.py), pure: which providers, when to
prepare a reply on an early final, when its request goes out, when the prepared reply is
the turn's, what a tool call in it does."""

from __future__ import annotations

import pytest

from edgevoice.device.agents import PROVIDERS
from edgevoice.device.runtime.metrics import Mark, TurnTimeline
from edgevoice.device.runtime.speculation import (
    USED,
    AgentLead,
    Drop,
    Speculate,
    commit_refusal,
    lead_of,
    on_tool_call,
    send_delay_s,
    speculates,
    start_refusal,
)


@pytest.mark.parametrize(("setting", "allowed"), [
    ("auto", {"openai", "ollama"}),
    ("on", {"openai", "ollama", "agent"}),
    ("off", set()),
])
def test_only_stateless_chat_is_speculated_on_auto_and_the_agent_contract_only_when_asked(
        setting: str, allowed: set[str]) -> None:
    assert {p for p in PROVIDERS if speculates(setting, p)} == allowed
    # Home Assistant executes commands, the local agent acts on the device, the operator is
    # a person: never, whatever the setting
    for provider in ("homeassistant", "local", "operator"):
        assert not speculates(setting, provider)


def test_the_settings_are_the_config_choices() -> None:
    from dataclasses import fields

    from edgevoice.device.config.fields import check_of
    from edgevoice.device.config.schema import LlmConfig

    (field,) = [f for f in fields(LlmConfig) if f.name == "speculate"]
    check = check_of(field)
    assert check is not None and set(check.choices or ()) == {str(s) for s in Speculate}


LISTENING = {"allowed": True, "listening": True, "accepted": True, "remote": False}


def test_an_early_final_of_the_person_s_turn_is_prepared() -> None:
    assert start_refusal(**LISTENING) is None  # before its text is known
    assert start_refusal(**LISTENING, text="what is the weather like tomorrow") is None


@pytest.mark.parametrize(("change", "why"), [
    ({"allowed": False}, "provider"),
    ({"listening": False}, "not_listening"),  # e.g. the device is speaking
    ({"accepted": False}, "not_listening"),  # heard over the device's reply, not a barge-in yet
    ({"remote": True}, "remote"),  # Home Assistant's pipeline answers
])
def test_nothing_is_prepared_outside_a_turn_of_the_person_s_for_the_agent(
        change: dict[str, bool], why: str) -> None:
    assert start_refusal(**{**LISTENING, **change}, text="what time is it") == why


@pytest.mark.parametrize(("text", "why"), [
    ("", "no_words"), (" . ", "no_words"),
    ("start over", "control"), ("stop please", "control"), ("Goodbye.", "control"),
])
def test_words_the_device_answers_itself_never_reach_the_agent_early(text: str, why: str) -> None:
    assert start_refusal(**LISTENING, text=text) == why


def test_words_held_mid_thought_are_not_prepared() -> None:
    # the text hold keeps the pause open: the person nearly always goes on
    assert start_refusal(**LISTENING, text="set a timer for", held=True) == "mid_thought"
    assert start_refusal(**LISTENING, text="set a timer for") is None  # no hold: the turn may end
    assert start_refusal(**LISTENING, text="stop", held=True) == "control"  # the device's own first


def test_a_question_that_only_mentions_a_control_word_is_prepared() -> None:
    assert start_refusal(**LISTENING, text="how do i stop the dishwasher") is None


READY = {"same_turn": True, "prepared": True, "failed": False}


@pytest.mark.parametrize(("early", "final"), [
    ("what is the weather like tomorrow", "what is the weather like tomorrow"),
    ("What is the weather like tomorrow?", "what is the weather like tomorrow"),
    ("what's the  time", "What's the time."),
])
def test_the_prepared_reply_is_released_when_the_final_says_the_same(early: str, final: str) -> None:
    assert commit_refusal(**READY, early_text=early, final_text=final) is None


@pytest.mark.parametrize(("early", "final"), [
    ("what is the weather", "what is the weather like tomorrow"),  # they went on
    ("set a timer for ten minutes", "set a timer for two minutes"),
    ("what is the weather like tomorrow", "what is the weather like tomorrow in paris"),
])
def test_a_different_final_drops_it(early: str, final: str) -> None:
    assert commit_refusal(**READY, early_text=early, final_text=final) is Drop.DIFFERENT


def test_it_is_dropped_for_another_turn_before_it_was_ready_or_after_it_failed() -> None:
    text = "what time is it"
    assert commit_refusal(**{**READY, "same_turn": False}, early_text=text, final_text=text) is Drop.NOT_SENT
    assert commit_refusal(**READY, early_text=None, final_text=text) is Drop.NOT_READY
    assert commit_refusal(**{**READY, "prepared": False}, early_text=text, final_text=text) is Drop.NOT_READY
    assert commit_refusal(**{**READY, "failed": True}, early_text=text, final_text=text) is Drop.FAILED


def test_a_reply_that_starts_with_a_tool_call_is_dropped_one_with_words_first_waits() -> None:
    assert on_tool_call(committed=False, saw_text=False) is Drop.TOOL_CALL
    assert on_tool_call(committed=False, saw_text=True) is None  # held until the commit
    assert on_tool_call(committed=True, saw_text=False) is None  # the turn's own reply now


def test_the_request_waits_until_its_first_audio_is_due_a_margin_before_the_soonest_end() -> None:
    # the pause can end the turn at 10.6 s; the agent takes 0.25 s to its first audio; 0.1 s
    # of margin: the request is due out at 10.25 s
    assert send_delay_s(now_s=10.0, earliest_end_s=10.6, lead_s=0.25, margin_s=0.1) == pytest.approx(0.25)
    # a slow agent (or a turn model's early check): the moment has passed, at once
    assert send_delay_s(now_s=10.0, earliest_end_s=10.6, lead_s=0.6, margin_s=0.1) == 0.0
    assert send_delay_s(now_s=10.0, earliest_end_s=10.2, lead_s=0.25, margin_s=0.1) == 0.0
    # nothing known of the agent, or of the pause: at once, as before the agent's pace is known
    assert send_delay_s(now_s=10.0, earliest_end_s=10.6, lead_s=None, margin_s=0.1) == 0.0
    assert send_delay_s(now_s=10.0, earliest_end_s=None, lead_s=0.25, margin_s=0.1) == 0.0


def test_the_agent_s_lead_is_the_longest_of_its_last_replies() -> None:
    lead = AgentLead(keep=3)
    assert lead.estimate() is None
    for seconds in (0.3, 0.9, 0.2, 0.25):
        lead.add(seconds)
    assert lead.estimate() == pytest.approx(0.9)  # among the last three
    lead.add(0.2)  # 0.9 is now four replies back
    assert lead.estimate() == pytest.approx(0.25)
    lead.clear()
    assert lead.estimate() is None


def test_a_turn_s_lead_runs_from_its_reply_s_start_to_its_first_audio() -> None:
    def timeline(used: bool, **marks: float) -> TurnTimeline:
        t = TurnTimeline("turn-1", {Mark(k): v for k, v in marks.items()})
        if used:
            t.extra["speculation"] = USED
        return t

    asked = {"asr_final": 5.0, "request_sent": 5.02, "first_audio": 5.4}
    assert lead_of(timeline(False, **asked)) == pytest.approx(0.4)
    # a prepared reply started when its request went out, before the final
    prepared = {"speculated": 4.5, "request_sent": 4.51, "asr_final": 5.0, "first_audio": 4.8}
    assert lead_of(timeline(True, **prepared)) == pytest.approx(0.3)
    # no audio (the agent failed), or no request (a control, an announcement): nothing learnt
    assert lead_of(timeline(False, asr_final=5.0, request_sent=5.02)) is None
    assert lead_of(timeline(False, asr_final=5.0, first_audio=5.3)) is None
