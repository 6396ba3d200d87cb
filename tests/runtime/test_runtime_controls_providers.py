""""Start over", "stop" and the button with the openai, ollama and homeassistant providers.

The whole device, with the example agent server on loopback speaking each provider's own
wire: OpenAI's streamed ``/v1/chat/completions``, Ollama's NDJSON ``/api/chat`` and Home
Assistant's ``/api/conversation/process``. What the device carries of earlier turns is read
from the requests the server received: the ``messages`` history for openai and ollama, the
``conversation_id`` for Home Assistant. The control words never appear in any request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory
from support.agent_server import example_server
from support.device_harness import PHRASES, WAKE_PHRASE, Device, running_device, voice

from edgevoice.device.events import Event, EventType

GRAMMAR = "asr.grammar=[" + ", ".join(f'"{p}"' for p in (*PHRASES, "start over", "stop")) + "]"
WAKEWORD = ["listen.mode=wakeword", "listen.wakeword=okay_nabu", "listen.follow_up_s=4"]
# The room runs faster than the wall clock: a hold soon after the press that interrupted
# would be a double press (mute) on gpiozero's wall-clock timing.
BUTTON = ["gpio.enabled=true", "gpio.button_pin=17", "gpio.led_pin=-1", "gpio.reset_hold_s=0.5",
          "gpio.double_press_mutes=false"]


def _chat_history(body: dict[str, Any]) -> list[tuple[str, str]]:
    """Earlier turns in an openai/ollama request: every message but the system prompt and
    this turn's own."""
    return [(m["role"], m["content"]) for m in body["messages"][:-1] if m["role"] != "system"]


@dataclass(frozen=True)
class Wire:
    provider: str
    path: str  # on the example server
    overrides: Callable[[str], list[str]]
    asked: Callable[[dict[str, Any]], str]  # the person's words in a request
    earlier: Callable[[dict[str, Any]], Any]  # what a request carries of earlier turns (falsy: none)
    streams: bool  # the reply arrives over an open connection (cut when interrupted)


WIRES = [
    Wire("openai", "/v1/chat/completions",
         lambda url: ["llm.provider=openai", f"openai.base_url={url}/v1", "openai.model=test"],
         lambda body: str(body["messages"][-1]["content"]), _chat_history, streams=True),
    Wire("ollama", "/api/chat",
         lambda url: ["llm.provider=ollama", f"ollama.base_url={url}", "ollama.model=test"],
         lambda body: str(body["messages"][-1]["content"]), _chat_history, streams=True),
    Wire("homeassistant", "/api/conversation/process",
         lambda url: ["llm.provider=homeassistant", f"homeassistant.url={url}"],
         lambda body: str(body["text"]), lambda body: body.get("conversation_id"), streams=False),
]
providers = pytest.mark.parametrize("wire", WIRES, ids=[w.provider for w in WIRES])


@pytest.fixture(autouse=True)
def _voices_ready() -> None:
    # Synthesised before the device runs: at speed 0 the room's clock races on while a
    # line is synthesised, and "stop" must land inside the follow-up window.
    for phrase in ("start over", "stop"):
        voice(phrase)


def carried(server: Any, wire: Wire, exchanges: list[tuple[str, str]]) -> Any:
    """What a request should carry of the conversation so far: for Home Assistant the
    ``conversation_id`` its first answer gave (the example server keeps its conversations
    in order); else each exchange's words and what the person heard of the reply."""
    if wire.provider == "homeassistant":
        return next(iter(server.state.sessions))
    return [pair for user, assistant in exchanges for pair in (("user", user), ("assistant", assistant))]


def spoken_since(device: Device, event: Event) -> str:
    after = device.events[device.events.index(event):]
    return " ".join(e.data["text"] for e in after if e.type == EventType.TRANSCRIPT_AGENT)


def heard_since(device: Device, event: Event) -> list[str]:
    after = device.events[device.events.index(event):]
    return [e.data["text"] for e in after if e.type == EventType.TRANSCRIPT_USER]


async def turn(device: Device, text: str, *, after_s: float = 0.5) -> tuple[str, str]:
    """Say ``text`` and wait for the reply to complete: (what was said, what was spoken)."""
    device.say(text, after_s=after_s)
    heard = await device.wait_for(EventType.TRANSCRIPT_USER)
    assert heard.data["text"] == text
    await device.wait_for(EventType.REPLY_DONE, status="completed")
    return text, spoken_since(device, heard)


@providers
async def test_start_over_resets_the_provider_s_conversation_and_is_never_asked(
        tmp_path: Path, wire: Wire) -> None:
    async with (
        example_server() as server,
        running_device(tmp_path, [*wire.overrides(server.url), GRAMMAR]) as device,
    ):
            exchange = await turn(device, "my name is alice")
            await turn(device, "hello there")
            first, second = server.state.bodies(wire.path)
            assert not wire.earlier(first)
            # the conversation goes on (so the check after "start over" can fail)
            assert wire.earlier(second) == carried(server, wire, [exchange])

            device.say("start over", after_s=0.5)
            await device.wait_for(EventType.TRANSCRIPT_USER, text="start over")
            reset = await device.wait_for(EventType.SESSION_RESET)
            assert reset.data["reason"] == "voice_start_over"
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            assert spoken_since(device, reset) == "Okay, let's start over."
            assert len(server.state.bodies(wire.path)) == 2  # not sent as a question

            await turn(device, "what is my name")
            bodies = server.state.bodies(wire.path)
            assert [wire.asked(b) for b in bodies] == ["my name is alice", "hello there", "what is my name"]
            assert not wire.earlier(bodies[2])  # no earlier history, no earlier conversation_id
            assert device.daemon.agent is not None
            assert device.daemon.agent.session_id == reset.data["session_id"]


@providers
async def test_stop_ends_the_provider_s_conversation_and_is_never_asked(tmp_path: Path, wire: Wire) -> None:
    async with (
        example_server() as server,
        running_device(tmp_path, [*wire.overrides(server.url), GRAMMAR, *WAKEWORD]) as device,
    ):
            device.say(WAKE_PHRASE, after_s=0.5)
            await device.wait_for(EventType.WAKE_WORD, name="okay_nabu")
            exchange = await turn(device, "my name is alice", after_s=0.6)
            await turn(device, "hello there")  # the follow-up window: no wake word needed
            assert wire.earlier(server.state.bodies(wire.path)[1]) == carried(server, wire, [exchange])

            device.say("stop", after_s=0.5)  # in the follow-up window, too
            await device.wait_for(EventType.TRANSCRIPT_USER, text="stop")
            reset = await device.wait_for(EventType.SESSION_RESET)
            assert reset.data["reason"] == "voice_stop"
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            assert spoken_since(device, reset) == "Okay, goodbye."

            # The conversation is over: no follow-up window, this is not a turn...
            device.say("what is my name", after_s=0.5)
            # ...and the wake word starts a new one.
            device.say(WAKE_PHRASE, after_s=3.0)
            await device.wait_for(EventType.WAKE_WORD, name="okay_nabu")
            await turn(device, "how many things have i said", after_s=0.6)
            assert heard_since(device, reset) == ["how many things have i said"]
            bodies = server.state.bodies(wire.path)
            assert [wire.asked(b) for b in bodies] == ["my name is alice", "hello there",
                                                       "how many things have i said"]
            assert not wire.earlier(bodies[2])


@providers
async def test_the_button_interrupts_and_a_hold_starts_over_with_the_provider(
        tmp_path: Path, wire: Wire) -> None:
    factory = MockFactory()
    try:
        async with example_server(word_delay_s=0.25) as server:
            overrides = [*wire.overrides(server.url), GRAMMAR, *BUTTON]
            async with running_device(tmp_path, overrides, pin_factory=factory) as device:
                button = factory.pin(17)
                device.say("tell me a long story")
                await device.wait_for(EventType.REPLY_STARTED)
                button.drive_low()
                button.drive_high()
                done = await device.wait_for(EventType.REPLY_DONE)
                assert done.data["status"] == "interrupted"
                if wire.streams:
                    await server.state.wait_for_disconnect(within_s=5)  # the request was cut
                # A press ends the reply; it asks the agent nothing and keeps the session:
                # the next request carries what was heard of the story.
                await turn(device, "what is my name")
                _, after_press = server.state.bodies(wire.path)
                assert wire.asked(after_press) == "what is my name"
                story = ("tell me a long story", done.data["heard_text"])
                assert wire.earlier(after_press) == carried(server, wire, [story])

                # A long hold starts over, as "start over" does.
                button.drive_low()
                await device.wait_for(EventType.BUTTON_HELD, timeout_s=10)
                reset = await device.wait_for(EventType.SESSION_RESET)
                assert reset.data["reason"] == "reset"
                button.drive_high()
                await turn(device, "hello there", after_s=1.0)
                bodies = server.state.bodies(wire.path)
                assert [wire.asked(b) for b in bodies] == [
                    "tell me a long story", "what is my name", "hello there"]
                assert not wire.earlier(bodies[2])
                assert device.daemon.agent is not None
                assert device.daemon.agent.session_id == reset.data["session_id"]
    finally:
        factory.reset()
