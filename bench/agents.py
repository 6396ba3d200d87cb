#!/usr/bin/env python3
"""Agent clients against the example agent server on loopback, beside bare aiohttp.

Per provider, over N turns (after a warm-up), medians and 90th percentiles of:
- first byte → first sentence: from the server handing the reply's first bytes to the
  socket to the SentenceSplitter handing the first sentence on (target <= 2 ms), beside a
  bare aiohttp request of the same reply read until the bytes that settle the first
  sentence ("...answer. It ") have arrived — the difference is the client's own cost;
- request overhead: from starting the turn to the server having the request body
  (request built and sent), ours beside a bare ``aiohttp`` POST of the same body; both
  reuse a pooled connection.

The server runs in this process and loop (perf_counter is shared), so both sides see
the same clock. Run: ``./dev bench agents`` or ``python bench/agents.py --turns 30``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.agent_server import example_server

from edgevoice.device.agents import AgentClient, UserTurn, build_agent
from edgevoice.device.config.loader import build_config
from edgevoice.device.config.schema import Config
from edgevoice.device.speaking.sentences import SentenceSplitter

TEXT = "tell me a long story"
# The reply begins "Here is a long answer. It has ...": the splitter can only hand the
# first sentence on once the next word has arrived.
SETTLES_FIRST_SENTENCE = b"It "


@dataclass
class Row:
    name: str
    sentence_ms: list[float]
    overhead_ms: list[float]
    bare_overhead_ms: list[float]
    bare_first_ms: list[float]


def configs(base: str) -> dict[str, tuple[Config, str, dict[str, Any]]]:
    """Provider name → (config, bare URL, bare body)."""
    def cfg(**sections: Any) -> Config:
        return build_config([("bench", sections)])

    agent_body = {"session_id": "bare", "type": "chat", "text": TEXT}
    chat_body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": TEXT}]}
    return {
        "agent (sse)": (cfg(llm={"provider": "agent"}, agent={"url": base + "/agent?shape=sse"}),
                        base + "/agent?shape=sse", agent_body),
        "agent (text)": (cfg(llm={"provider": "agent"}, agent={"url": base + "/agent?shape=text"}),
                         base + "/agent?shape=text", agent_body),
        "agent (json)": (cfg(llm={"provider": "agent"}, agent={"url": base + "/agent?shape=json"}),
                         base + "/agent?shape=json", agent_body),
        "openai": (cfg(llm={"provider": "openai", "tools": []}, openai={"base_url": base + "/v1"}),
                   base + "/v1/chat/completions", chat_body),
        "ollama": (cfg(llm={"provider": "ollama"}, ollama={"base_url": base}), base + "/api/chat", chat_body),
        "homeassistant": (cfg(llm={"provider": "homeassistant"}, homeassistant={"url": base}),
                          base + "/api/conversation/process", {"text": TEXT, "language": "en"}),
    }


async def ours(client: AgentClient, state: Any) -> tuple[float, float]:
    client.reset_session()
    splitter = SentenceSplitter()
    started = time.perf_counter()
    sentence_at = None
    async for delta in client.reply(UserTurn(TEXT)):
        if sentence_at is None and splitter.feed(delta):
            sentence_at = time.perf_counter()
    if sentence_at is None:
        splitter.flush()
        sentence_at = time.perf_counter()
    record = state.requests[-1]
    return (sentence_at - record.first_write_at) * 1000, (record.at - started) * 1000


async def bare(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], state: Any
) -> tuple[float, float]:
    started = time.perf_counter()
    async with session.post(url, json=body) as response:
        seen = b""
        settled_at = None
        while chunk := await response.content.readany():
            seen += chunk
            if settled_at is None and SETTLES_FIRST_SENTENCE in seen:
                settled_at = time.perf_counter()
        settled_at = settled_at or time.perf_counter()
    record = state.requests[-1]
    return (settled_at - record.first_write_at) * 1000, (record.at - started) * 1000


async def local_row(turns: int) -> Row:
    client = build_agent(build_config([("b", {"llm": {"provider": "local"}, "local": {"word_delay_ms": 0}})]))
    sentence: list[float] = []
    for _ in range(turns):
        splitter = SentenceSplitter()
        first = None
        async for delta in client.reply(UserTurn(TEXT)):
            now = time.perf_counter()
            first = first or now
            if splitter.feed(delta):
                sentence.append((time.perf_counter() - first) * 1000)
                break
    return Row("local (no server)", sentence, [], [], [])


async def main(turns: int, warmup: int) -> list[Row]:
    rows: list[Row] = []
    async with example_server() as server, aiohttp.ClientSession() as session:
        for name, (config, url, body) in configs(server.url).items():
            row = Row(name, [], [], [], [])
            client = build_agent(config)
            for index in range(warmup + turns):
                sentence, overhead = await ours(client, server.state)
                bare_first, bare_overhead = await bare(session, url, body, server.state)
                if index >= warmup:
                    row.sentence_ms.append(sentence)
                    row.overhead_ms.append(overhead)
                    row.bare_first_ms.append(bare_first)
                    row.bare_overhead_ms.append(bare_overhead)
            await client.aclose()
            rows.append(row)
    rows.append(await local_row(turns))
    return rows


def _stat(values: list[float]) -> str:
    if not values:
        return "—"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.median(ordered):.2f} / {p90:.2f} / {ordered[0]:.2f}"


def print_table(rows: list[Row], turns: int) -> None:
    print(f"agent clients on loopback, {turns} turns each, median / p90 / min in ms")
    print("| provider | first byte → first sentence (ours) | first byte → sentence's bytes in (bare aiohttp) "
          "| turn start → request at server (ours) | same (bare aiohttp) |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row.name} | {_stat(row.sentence_ms)} | {_stat(row.bare_first_ms)} | "
              f"{_stat(row.overhead_ms)} | {_stat(row.bare_overhead_ms)} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    print_table(asyncio.run(main(args.turns, args.warmup)), args.turns)
