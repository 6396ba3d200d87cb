"""The agents read the knowledge base: the contract's ``context``, the system message of
openai and ollama, nothing for Home Assistant, and the local agent's own answers. Real
HTTP peers on loopback (the example agent server)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from support.agent_server import example_server

from edgevoice.device.agents import AgentClient, UserTurn, build_agent
from edgevoice.device.agents.local import Intent, LocalAgentClient
from edgevoice.device.agents.openai import KNOWLEDGE_CLOSE, KNOWLEDGE_OPEN
from edgevoice.device.config.loader import build_config
from edgevoice.device.config.schema import Config
from edgevoice.device.knowledge import KnowledgeBase

MATCHING = "where can I see the whale skeleton"
NOT_MATCHING = "what is the capital of australia"


def make_config(**sections: Any) -> Config:
    return build_config([("test", sections)])


async def ask(client: AgentClient, turn: UserTurn) -> str:
    return "".join([d async for d in client.reply(turn)])


def test_a_matching_turn_finds_the_entry_and_a_stranger_one_finds_nothing(museum: KnowledgeBase) -> None:
    found = museum.lookup(MATCHING)
    assert found.matched and found.passages[0].key == "faq#whale"
    assert found.elapsed_ms > 0
    assert "fin whale" in found.context()[0]
    assert not museum.lookup(NOT_MATCHING).matched
    assert not museum.lookup("what is it").matched  # function words only
    assert museum.lookup("the xylophone quintessence").passages == ()


async def test_agent_contract_carries_context_only_when_the_turn_matched(museum: KnowledgeBase) -> None:
    async with example_server() as server:
        client = build_agent(make_config(llm={"provider": "agent"}, agent={"url": server.url + "/agent"}))
        try:
            await ask(client, UserTurn(MATCHING, knowledge=museum.lookup(MATCHING)))
            await ask(client, UserTurn(NOT_MATCHING, knowledge=museum.lookup(NOT_MATCHING)))
            await ask(client, UserTurn("hello"))  # knowledge off: no lookup at all
        finally:
            await client.aclose()
        bodies = server.state.bodies()
    matched, unmatched, off = bodies
    assert matched["text"] == MATCHING
    assert isinstance(matched["context"], list) and all(isinstance(c, str) for c in matched["context"])
    assert "fin whale" in matched["context"][0] and "maritime hall" in matched["context"][0]
    assert len(matched["context"]) <= 3
    assert MATCHING not in " ".join(matched["context"])
    assert unmatched["text"] == NOT_MATCHING and "context" not in unmatched
    assert "context" not in off


async def test_openai_folds_the_chunks_into_the_system_message_only(museum: KnowledgeBase) -> None:
    async with example_server() as server:
        cfg = make_config(llm={"provider": "openai", "system_prompt": "You are the museum kiosk.",
                               "tools": []},
                          openai={"base_url": server.url + "/v1", "model": "m"})
        client = build_agent(cfg)
        try:
            await ask(client, UserTurn(MATCHING, knowledge=museum.lookup(MATCHING)))
            await ask(client, UserTurn(NOT_MATCHING, knowledge=museum.lookup(NOT_MATCHING)))
        finally:
            await client.aclose()
        bodies = server.state.bodies("/v1/chat/completions")
    first = bodies[0]["messages"]
    system = first[0]
    assert system["role"] == "system" and system["content"].startswith("You are the museum kiosk.")
    block = system["content"].split(KNOWLEDGE_OPEN + "\n", 1)[1]
    assert block.endswith(KNOWLEDGE_CLOSE)
    assert block.startswith("[1] ") and "fin whale" in block.split("\n")[0]
    assert first[-1] == {"role": "user", "content": MATCHING}
    second = bodies[1]["messages"]
    assert second[0]["content"] == "You are the museum kiosk."
    assert second[-1] == {"role": "user", "content": NOT_MATCHING}


async def test_ollama_folds_the_chunks_into_the_system_message_only(museum: KnowledgeBase) -> None:
    async with example_server() as server:
        cfg = make_config(llm={"provider": "ollama", "system_prompt": ""},
                          ollama={"base_url": server.url, "model": "qwen"})
        client = build_agent(cfg)
        try:
            await ask(client, UserTurn(MATCHING, knowledge=museum.lookup(MATCHING)))
            await ask(client, UserTurn(NOT_MATCHING, knowledge=museum.lookup(NOT_MATCHING)))
        finally:
            await client.aclose()
        bodies = server.state.bodies("/api/chat")
    first = bodies[0]["messages"]
    assert first[0]["role"] == "system" and KNOWLEDGE_OPEN in first[0]["content"]
    assert "fin whale" in first[0]["content"]
    assert first[-1] == {"role": "user", "content": MATCHING}
    # No prompt and nothing matched: no system message at all; history holds the plain text.
    second = bodies[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[0] == {"role": "user", "content": MATCHING}
    assert second[-1] == {"role": "user", "content": NOT_MATCHING}


async def test_homeassistant_is_sent_nothing_of_it(museum: KnowledgeBase) -> None:
    async with example_server(api_key="tok") as server:
        cfg = make_config(llm={"provider": "homeassistant"},
                          homeassistant={"url": server.url, "token": "tok"})
        client = build_agent(cfg)
        try:
            assert client.uses_knowledge is False
            await ask(client, UserTurn(MATCHING, knowledge=museum.lookup(MATCHING)))
        finally:
            await client.aclose()
        bodies = server.state.bodies("/api/conversation/process")
    assert bodies[0]["text"] == MATCHING and "fin whale" not in str(bodies[0])


def local_agent() -> LocalAgentClient:
    client = build_agent(make_config(llm={"provider": "local"}),
                         now=lambda: datetime(2026, 3, 4, 9, 30, tzinfo=UTC))
    assert isinstance(client, LocalAgentClient)
    return client


def test_local_agent_says_a_qa_entry_answer(museum: KnowledgeBase) -> None:
    reply = local_agent().answer(UserTurn("how much does a ticket cost", knowledge=museum.lookup(
        "how much does a ticket cost")))
    assert reply.intent is Intent.KNOWLEDGE
    assert reply.text.startswith("Adult tickets are 14 euros")


def test_local_agent_says_the_matching_sentences_of_prose(museum: KnowledgeBase) -> None:
    text = "when is the steam engine run"
    reply = local_agent().answer(UserTurn(text, knowledge=museum.lookup(text)))
    assert reply.intent is Intent.KNOWLEDGE
    assert "every Saturday at noon" in reply.text
    assert "ship models" not in reply.text  # the chunk's other sentences are left out


def test_local_agent_does_not_guess_and_says_what_it_can_do(museum: KnowledgeBase) -> None:
    reply = local_agent().answer(UserTurn(NOT_MATCHING, knowledge=museum.lookup(NOT_MATCHING)))
    assert reply.intent is Intent.DONT_KNOW
    assert reply.text.startswith("Sorry, I don't know that.")
    assert "Harbourside Museum" in reply.text and "galleries" not in reply.text


def test_local_agent_keeps_its_own_skills_beside_knowledge(museum: KnowledgeBase) -> None:
    agent = local_agent()
    clock = agent.answer(UserTurn("what time is it", knowledge=museum.lookup("what time is it")))
    assert clock.intent is Intent.TIME and clock.text == "It is 09:30."
    stop = agent.answer(UserTurn("stop", knowledge=museum.lookup("stop")))
    assert stop.intent is Intent.STOP
    hello = agent.answer(UserTurn("hello", knowledge=museum.lookup("hello")))
    assert hello.intent is Intent.GREET and "Harbourside Museum" in hello.text


async def test_local_agent_streams_the_knowledge_answer(museum: KnowledgeBase) -> None:
    text = "can I take photos inside"
    said = await ask(local_agent(), UserTurn(text, knowledge=museum.lookup(text)))
    assert said.startswith("Photos for personal use are welcome")
