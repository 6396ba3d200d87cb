"""Speculation, end to end: the whole daemon in the simulated room at 1x (the room's clock
keeps to the wall clock, so the agent's and piper's time show on it), free-form
pocketsphinx, and an LLM-paced agent on loopback (tests/support/llm_paced_agent.py)
speaking the OpenAI chunk stream or the agent contract.

- used: the request goes out in the closing silence, the server gets it once, the first
  sound comes sooner than with ``[llm] speculate = "off"`` in the same scene, and the events
  are those of a turn without speculation;
- the person goes on after a pause past ``early_final_ms`` but short of the end silence: the
  prepared request is closed, nothing of it plays (though its first piece was made), no
  event or history of it is left, and the agent gets the whole turn;
- words that read mid-thought ("set a timer for") while the text hold keeps the pause open:
  nothing goes out until the turn ends;
- once a reply has shown the agent's pace, a hesitation that ends before the request is due
  sends nothing (``[llm] speculate_margin_ms``), and the turn's reply is still prepared;
- never: Home Assistant (it executes commands) and the agent contract unless opted in.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.agent_server import example_server
from support.device_harness import Device, running_device, voice
from support.llm_paced_agent import PacedState, Pacing, paced_agent, tokens

from edgevoice.audio.io.wav import read_wav
from edgevoice.device.events import Event, EventType
from edgevoice.device.runtime.controls import normalise

QUESTION = "what is the weather like tomorrow"
FIRST_PART, SECOND_PART = "what is the weather like", "in paris on sunday"
PAUSE_S = 0.45  # past [asr] early_final_ms (100; 300 would do too), short of end_silence_ms (600)
# Long enough to be still streaming when the person goes on (60 words at 20 ms a word).
LONG = ("I looked up the forecast for you and tomorrow looks mostly sunny in the morning with "
        "clouds building up after lunch and a chance of light rain in the evening so take a jacket "
        "if you are out late and maybe an umbrella too because the wind will pick up after dark "
        "and the temperature drops to around eight degrees by midnight which is cold for May, "
        "and on the day after that the rain clears early and the sun comes back for most of the "
        "afternoon with a light breeze from the west and highs near eighteen degrees, which "
        "should be a good day to be outside if you have plans for a walk or a picnic.")
# LONG streams for ~2.6 s at 20 ms a word: the device must close it well before its end even
# when a loaded CI machine notices the person going on a few hundred ms late.
REPLY = "It will be sunny and warm. Take a hat."
FREE_FORM = ["asr.grammar=[]", "llm.tools=[]"]
# A closing silence long enough that the early final (100 ms in) comes well before the turn
# ends on a loaded machine too (where the recognizer's pass and the front end run late).
LONG_END = "endpoint.end_silence_ms=1000"
# Event types whose number depends on the machine's pace, not on what the device did.
VARYING = {EventType.TRANSCRIPT_USER_DELTA, EventType.BARGE_IN_MODE, EventType.AEC_STATUS}


def openai(url: str, speculate: str) -> list[str]:
    return ["llm.provider=openai", f"openai.base_url={url}/v1", f"llm.speculate={speculate}", *FREE_FORM]


def turn_events(device: Device) -> list[Event]:
    return [e for e in device.events if e.type not in VARYING]


def asked(state: PacedState) -> list[str]:
    return [str(s.body["messages"][-1]["content"]) for s in state.log]


async def one_turn(tmp_path: Path, extra: list[str], say: Any) -> tuple[Device, dict[str, Any]]:
    """Start a device, let ``say`` put the person's words in the room, wait for the reply and
    its metrics; returns the device (stopped) and the turn's metrics.turn."""
    await asyncio.to_thread(tmp_path.mkdir, parents=True, exist_ok=True)
    async with running_device(tmp_path, extra, speed=1.0) as device:
        say(device)
        await device.wait_for(EventType.REPLY_DONE, timeout_s=60, status="completed")
        metrics = await device.wait_for(EventType.METRICS_TURN, timeout_s=10)
    return device, metrics.data


def say_question(device: Device) -> None:
    device.say(QUESTION, after_s=0.5)


def say_with_a_pause(device: Device, pause_s: float = PAUSE_S) -> float:
    """The question in two parts with a pause between; returns where (room clock) the first
    part ends."""
    first, second = voice(FIRST_PART), voice(SECOND_PART)
    at = device.room.add_talker(first, after_s=0.5)
    device.room.add_talker(second, after_s=0.5 + len(first) / 16000 + pause_s)
    return at + len(first) / 16000


def first_sound_s(device: Device) -> float:
    """Wall-clock seconds from the end of the person's speech (as the endpointer saw it) to
    the first sample of the reply leaving the loudspeaker."""
    (stopped,) = device.of(EventType.SPEECH_STOPPED)
    (started,) = device.of(EventType.REPLY_STARTED)
    return started.ts - stopped.ts


def shape(events: list[Event]) -> list[tuple[str, tuple[str, ...]]]:
    """Each event's type and field names (metrics.turn's speculation figures aside)."""
    extra = {"speculation", "speculations", "speculation_drops"}
    return [(str(e.type), tuple(sorted(k for k in e.data if k not in extra))) for e in events]


async def test_a_reply_prepared_in_the_closing_silence_plays_sooner_with_the_same_events(
        tmp_path: Path) -> None:
    for text in (QUESTION, FIRST_PART, SECOND_PART):
        voice(text)
    runs: dict[str, tuple[Device, dict[str, Any], list[str]]] = {}
    for speculate in ("off", "auto"):
        async with paced_agent(Pacing(ms_per_word=20), default_reply=REPLY) as (url, state):
            device, metrics = await one_turn(tmp_path / speculate, [*openai(url, speculate), LONG_END],
                                             say_question)
            runs[speculate] = (device, metrics, asked(state))
    (off, off_metrics, off_asked), (on, on_metrics, on_asked) = runs["off"], runs["auto"]
    heard = on.of(EventType.TRANSCRIPT_USER)[0].data["text"]
    # one request each, with the turn's words
    assert off_asked == [off.of(EventType.TRANSCRIPT_USER)[0].data["text"]]
    assert [normalise(t) for t in on_asked] == [normalise(heard)]
    # it went out before the turn ended, and its reply was the one played
    marks = on_metrics["marks_s"]
    assert on_metrics["speculation"] == "used" and on_metrics["speculations"] == 1
    assert marks["speculated"] <= marks["request_sent"] < marks["endpoint"] < marks["asr_final"]
    # where the time before it went: the pause reached early_final_ms (100), the pass ran
    assert marks["speech_end"] + 0.099 <= marks["early_final"] < marks["early_text"] <= marks["speculated"]
    assert not {"speculated", "early_final", "early_text"} & set(off_metrics["marks_s"])
    assert "speculation" not in off_metrics
    # the first sound came sooner: the agent's first words and piper's first piece were
    # ready (or on their way) when the turn ended
    assert first_sound_s(on) < first_sound_s(off) - 0.1, (first_sound_s(on), first_sound_s(off))
    # a turn's events, as without speculation
    assert shape(turn_events(on)) == shape(turn_events(off))
    # the whole reply, once, in order (where the first piece is cut depends on when the
    # first_wait_ms wait ran out against the agent's pace: "It will be sunny | and warm.")
    for device in (on, off):
        pieces = [e.data["text"] for e in device.of(EventType.TRANSCRIPT_AGENT)]
        assert " ".join(pieces) == "It will be sunny and warm. Take a hat.", pieces


async def test_the_person_going_on_after_a_pause_closes_the_prepared_request_unheard(
        tmp_path: Path) -> None:
    first_end: list[float] = []
    # A long pause, inside a long end silence: the prepared reply's first piece is made (and
    # would be heard, were it not held) before the person goes on.
    async with paced_agent(Pacing(ms_per_word=20)) as (url, state):
        state.queue.extend([LONG, REPLY])  # the prepared request gets LONG; the turn's own REPLY
        device, metrics = await one_turn(tmp_path, [*openai(url, "auto"), "endpoint.end_silence_ms=1600"],
                                         lambda d: first_end.append(say_with_a_pause(d, 1.1)))
        log = list(state.log)
    (final,) = device.of(EventType.TRANSCRIPT_USER)
    whole = str(final.data["text"])
    # the request prepared on the first part was sent, then closed mid-stream by the device
    assert len(log) == 2, asked(state)
    cut, answered = log
    before = str(cut.body["messages"][-1]["content"])
    # streamed for a while (long enough for piper's first piece), never to its end
    assert cut.text == LONG and 20 < cut.words < len(tokens(LONG))
    assert whole.startswith(before + " ") and len(whole.split()) > len(before.split())
    # the agent got the whole turn, with no history of the dropped request
    assert normalise(str(answered.body["messages"][-1]["content"])) == normalise(whole)
    assert [m["role"] for m in answered.body["messages"]] == ["system", "user"]
    # nothing of LONG was played or published; one request, one reply, one metrics
    spoken = [e.data["text"] for e in device.of(EventType.TRANSCRIPT_AGENT)]
    assert " ".join(spoken) == "It will be sunny and warm. Take a hat.", spoken
    assert [len(device.of(t)) for t in (EventType.REPLY_REQUESTED, EventType.REPLY_STARTED,
                                        EventType.REPLY_DONE, EventType.METRICS_TURN)] == [1, 1, 1, 1]
    assert not any("midnight" in str(e.data) for e in device.events)
    assert "resumed" in metrics["speculation_drops"]
    agent = device.daemon.agent
    assert agent is not None
    assert [(x.user, x.assistant) for x in agent.history] == [(answered.body["messages"][-1]["content"],
                                                               "It will be sunny and warm. Take a hat.")]
    # the loudspeaker was silent from the first part's end until the turn had ended
    speaker, _ = read_wav(device.room.recording_paths()["speaker"])
    (stopped,) = device.of(EventType.SPEECH_STOPPED)
    assert np.any(speaker) and not np.any(speaker[int(first_end[0] * 16000):
                                                  int(stopped.data["detected_s"] * 16000)])


async def test_words_that_read_mid_thought_send_nothing_ahead(tmp_path: Path) -> None:
    # "set a timer for" ... "ten minutes": the pause is past the early final, and the text
    # hold (on by default) keeps it open; a request on "set a timer for" would only be closed
    head, rest = "set a timer for", "ten minutes"
    parts = (voice(head), voice(rest))

    def say(device: Device) -> None:
        device.room.add_talker(parts[0], after_s=0.5)
        device.room.add_talker(parts[1], after_s=0.5 + len(parts[0]) / 16000 + 0.8)

    async with paced_agent(Pacing(ms_per_word=20), default_reply=REPLY) as (url, state):
        device, metrics = await one_turn(tmp_path, [*openai(url, "auto")], say)
    (final,) = device.of(EventType.TRANSCRIPT_USER)
    # the turn holds the words after the pause (Moonshine may add a word of its own at the end:
    # "... ten minutes so", with the decode begun 64 ms into the pause)
    assert "ten minutes" in normalise(str(final.data["text"])), final.data
    # one request, the whole turn's: prepared in its closing silence, and played
    assert [normalise(t) for t in asked(state)] == [normalise(str(final.data["text"]))]
    assert metrics["speculations"] == 1 and metrics["speculation"] == "used"


@pytest.mark.parametrize(("margin_ms", "closed"), [(100, 0), (10000, 1)])
async def test_once_the_agent_s_pace_is_known_a_hesitation_sends_nothing(
        tmp_path: Path, margin_ms: int, closed: int) -> None:
    # The first turn shows the agent's pace (its reply's start to its first audio: ~0.2-0.5 s
    # here). In the second the person hesitates 0.7 s, past the early final; with a 2 s end
    # silence the request is due out ~1.4 s into a pause, so with the default margin nothing
    # goes out in the hesitation. Sent at once (a 10 s margin) it is closed unread.
    extra = ["endpoint.end_silence_ms=2000", f"llm.speculate_margin_ms={margin_ms}"]
    for text in (QUESTION, FIRST_PART, SECOND_PART):
        voice(text)
    async with paced_agent(Pacing(ms_per_word=20), default_reply=REPLY) as (url, state):
        async with running_device(tmp_path, [*openai(url, "auto"), *extra], speed=1.0) as device:
            say_question(device)
            await device.wait_for(EventType.REPLY_DONE, timeout_s=60, status="completed")
            first = await device.wait_for(EventType.METRICS_TURN, timeout_s=10)
            say_with_a_pause(device, 0.7)
            await device.wait_for(EventType.REPLY_DONE, timeout_s=60, status="completed")
            second = await device.wait_for(EventType.METRICS_TURN, timeout_s=10)
        log = list(state.log)
    finals = [normalise(str(e.data["text"])) for e in device.of(EventType.TRANSCRIPT_USER)]
    assert len(finals) == 2 and first.data["speculation"] == "used"  # at once: no pace known yet
    # each turn's own request, and the hesitation's only when sent at once
    assert len(log) == 2 + closed, asked(state)
    assert normalise(str(log[-1].body["messages"][-1]["content"])) == finals[1]
    # the second turn's reply was still prepared in its closing silence, and played
    marks = second.data["marks_s"]
    assert second.data["speculation"] == "used" and marks["speculated"] < marks["endpoint"]
    assert second.data.get("speculation_drops", []) == ["resumed"] * closed


@pytest.mark.parametrize("provider", ["homeassistant", "agent"])
async def test_home_assistant_and_the_agent_contract_are_never_speculated_on_auto(
        tmp_path: Path, provider: str) -> None:
    async with example_server() as server, paced_agent(Pacing(ms_per_word=20), default_reply=REPLY) as (
            url, state):
        wire = ([f"homeassistant.url={server.url}", "llm.speculate=on"] if provider == "homeassistant"
                else [f"agent.url={url}/agent", "llm.speculate=auto"])
        device, metrics = await one_turn(tmp_path, [f"llm.provider={provider}", *wire, *FREE_FORM, LONG_END],
                                         say_question)
        path = "/api/conversation/process" if provider == "homeassistant" else "/agent"
        requests = server.state.bodies(path) if provider == "homeassistant" else [s.body for s in state.log]
    (final,) = device.of(EventType.TRANSCRIPT_USER)
    assert len(requests) == 1  # the turn, once: nothing went out in its closing silence
    assert requests[0]["text"] == final.data["text"]
    assert "speculated" not in metrics["marks_s"] and "speculations" not in metrics


async def test_the_agent_contract_is_speculated_when_opted_in(tmp_path: Path) -> None:
    # the other side of the test above: the same scene, speculate = "on"
    async with paced_agent(Pacing(ms_per_word=20), default_reply=REPLY) as (url, state):
        device, metrics = await one_turn(tmp_path, ["llm.provider=agent", f"agent.url={url}/agent",
                                                    "llm.speculate=on", *FREE_FORM, LONG_END], say_question)
        served = list(state.log)
    (final,) = device.of(EventType.TRANSCRIPT_USER)
    assert metrics["speculation"] == "used" and metrics["speculations"] == 1
    assert metrics["marks_s"]["speculated"] < metrics["marks_s"]["asr_final"]
    assert [normalise(s.body["text"]) for s in served] == [normalise(final.data["text"])]


async def test_a_reply_that_starts_with_a_tool_call_is_dropped_and_the_tool_runs_once_for_the_turn(
        tmp_path: Path) -> None:
    # The example server answers a turn that mentions the volume with a set_volume call.
    # The text hold is off: pocketsphinx sometimes hears this line as "said the volume to fit
    # the", whose last word reads mid-thought, and then speculation rightly sends nothing (the
    # test failed in 4 of 14 runs on 7 December that way); the hold is not what this tests.
    async with example_server() as server:
        device, metrics = await one_turn(
            tmp_path, ["llm.provider=openai", f"openai.base_url={server.url}/v1", "openai.model=test",
                       "asr.grammar=[]", "llm.tools=[\"set_volume\"]", "llm.speculate=auto",
                       "endpoint.hold_silence_ms=0"],
            lambda d: d.say("set the volume to fifty", after_s=0.5))
        bodies = server.state.bodies("/v1/chat/completions")
    (final,) = device.of(EventType.TRANSCRIPT_USER)
    assert "volume" in final.data["text"]
    assert metrics["speculation_drops"] == ["tool_call"] and metrics["speculation"] == "dropped"
    # the dropped attempt asked, got a tool call and ran nothing; the turn asked again, ran the
    # tool once, and sent its result
    assert [b["messages"][-1]["role"] for b in bodies] == ["user", "user", "tool"]
    (changed,) = device.of(EventType.VOLUME_CHANGED)
    assert device.events.index(changed) > device.events.index(final)
