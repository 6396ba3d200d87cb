"""The LLM-paced agent (tests/support/llm_paced_agent.py) that bench/heard_latency.py talks
to: each reply shape is read by the device's own agent clients (``build_agent``, as the
daemon builds them), and the words come at the configured pace."""

from __future__ import annotations

import time
from typing import Any

import aiohttp
import pytest
from support.llm_paced_agent import Pacing, paced_agent, plain, tokens

from edgevoice.device.agents import AgentClient, UserTurn, build_agent
from edgevoice.device.config.loader import build_config

REPLY = ("Sure, here is the list for **tomorrow** morning:\n- Milk at 7:30 a.m.\n- Bread, $3.50\n"
         "Anything else?")


def client_for(base: str, provider: str, shape: str = "sse") -> AgentClient:
    if provider == "openai":
        sections: dict[str, Any] = {"llm": {"provider": "openai"}, "openai": {"base_url": base + "/v1"}}
    else:
        sections = {"llm": {"provider": "agent"}, "agent": {"url": f"{base}/agent?shape={shape}"}}
    return build_agent(build_config([("test", sections)]))


async def timed_reply(client: AgentClient, text: str) -> tuple[float, list[tuple[float, str]]]:
    start = time.monotonic()
    deltas = [(time.monotonic() - start, d) async for d in client.reply(UserTurn(text))]
    return start, deltas


@pytest.mark.parametrize(("provider", "shape"), [("agent", "sse"), ("agent", "text"), ("openai", "sse")])
@pytest.mark.parametrize("markdown", [True, False])
async def test_each_shape_parses_with_the_device_client(provider: str, shape: str, markdown: bool) -> None:
    async with paced_agent(Pacing(ms_per_word=5, markdown=markdown)) as (base, state):
        state.queue.extend([REPLY])
        client = client_for(base, provider, shape)
        try:
            _, deltas = await timed_reply(client, "what do I need")
        finally:
            await client.aclose()
    text = "".join(d for _, d in deltas)
    assert text == (REPLY if markdown else plain(REPLY))
    assert ("**" in text) == markdown and ("\n- " in text) == markdown
    assert state.log[0].path == ("/v1/chat/completions" if provider == "openai" else "/agent")
    assert state.log[0].shape == ("openai" if provider == "openai" else shape)
    if shape == "sse":  # one event per word, as an LLM streams tokens
        assert len(deltas) == len(tokens(text))


@pytest.mark.parametrize(("provider", "shape"), [("agent", "sse"), ("agent", "text"), ("openai", "sse")])
async def test_words_come_at_the_configured_pace(provider: str, shape: str) -> None:
    words = "One two three four five six seven eight nine ten."
    ttft_ms, per_word_ms = 150.0, 30.0
    async with paced_agent(Pacing(ttft_ms=ttft_ms, ms_per_word=per_word_ms)) as (base, state):
        state.queue.append(words)
        client = client_for(base, provider, shape)
        try:
            _, deltas = await timed_reply(client, "count")
        finally:
            await client.aclose()
    assert "".join(d for _, d in deltas) == words
    first_s, last_s = deltas[0][0], deltas[-1][0]
    span_ms = (len(tokens(words)) - 1) * per_word_ms
    assert first_s * 1000 >= ttft_ms - 5
    assert first_s * 1000 <= ttft_ms + 150
    # the last word is due ttft + 9 x 30 ms after the request reached the server
    assert last_s * 1000 >= ttft_ms + span_ms - 5
    assert last_s * 1000 <= ttft_ms + span_ms + 200
    served = state.log[0]
    assert served.first_write is not None and served.last_write is not None
    assert abs((served.last_write - served.first_write) * 1000 - span_ms) < 60


async def test_script_queues_replies_in_order_and_changes_pacing() -> None:
    async with paced_agent(Pacing(ms_per_word=0), default_reply="Okay.") as (base, state), \
            aiohttp.ClientSession() as http:
        body = {"replies": ["First one.", "Second one."], "pacing": {"ms_per_word": 1.0}}
        async with http.post(base + "/script", json=body) as response:
            assert (await response.json()) == {"queued": 2}
        client = client_for(base, "agent")
        try:
            said = ["".join(d for _, d in (await timed_reply(client, q))[1]) for q in "abc"]
        finally:
            await client.aclose()
        async with http.get(base + "/log") as response:
            logged = await response.json()
        async with http.post(base + "/v1/chat/completions", json={"messages": []}) as response:
            assert response.status == 400  # the device always streams
    assert said == ["First one.", "Second one.", "Okay."]
    assert [entry["text"] for entry in logged] == said
    assert state.pacing.ms_per_word == 1.0


def test_tokens_keep_the_whitespace_before_each_word() -> None:
    assert tokens("Sure, the list:\n- Milk") == ["Sure,", " the", " list:", "\n-", " Milk"]
    assert "".join(tokens(REPLY)) == REPLY
    assert plain("**Hi** there\n- one\n# Head") == "Hi there\none\nHead"
