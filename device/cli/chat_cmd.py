"""``edgevoice chat [TEXT]``: talk to the configured agent in text, without audio.

With TEXT: one turn, the reply streamed to stdout. Without: an interactive text
conversation (same session, same history) until end of input, "stop" or an agent that
ends the conversation. ``--json`` prints one object per turn: ``reply``, ``provider``,
``session_id``, ``ttft_ms``, ``first_sentence_ms``, ``total_ms`` and, when the turn
failed, ``error`` ``{code, message}`` (the exit status is then non-zero).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgevoice.device.agents import (
    AgentClient,
    AgentError,
    AgentUnreachableError,
    RecordingActions,
    UserTurn,
    build_agent,
)
from edgevoice.device.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    add_common_options,
    load,
    print_json,
)
from edgevoice.device.speaking.sentences import SentenceSplitter


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "chat", help="send text turns to the configured agent and stream its replies (no audio)"
    )
    add_common_options(parser, json_output=True)
    parser.add_argument("text", nargs="?", metavar="TEXT",
                        help="one turn; without it, an interactive text conversation")
    parser.set_defaults(func=_chat)


@dataclass(frozen=True, slots=True)
class TurnReport:
    """One turn as measured from the moment the request was started."""

    reply: str
    ttft_ms: float | None
    first_sentence_ms: float | None
    total_ms: float
    error: AgentError | None = None

    def as_dict(self, client: AgentClient) -> dict[str, Any]:
        data: dict[str, Any] = {
            "reply": self.reply,
            "provider": client.provider,
            "session_id": client.session_id,
            "ttft_ms": _round(self.ttft_ms),
            "first_sentence_ms": _round(self.first_sentence_ms),
            "total_ms": _round(self.total_ms),
        }
        if self.error is not None:
            data["error"] = {"code": self.error.code, "message": self.error.message}
        return data


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


async def timed_turn(
    client: AgentClient, text: str, on_delta: Callable[[str], None] | None = None,
    knowledge: Any = None,
) -> TurnReport:
    """Run one turn, timing the first text and the first sentence a TTS would get.
    ``knowledge`` (a KnowledgeBase) looks the turn up first, as the daemon does."""
    splitter = SentenceSplitter()
    parts: list[str] = []
    ttft: float | None = None
    first_sentence: float | None = None
    error: AgentError | None = None
    started = time.perf_counter()
    try:
        found = knowledge.lookup(text) if knowledge is not None and client.uses_knowledge else None
        async for delta in client.reply(UserTurn(text, knowledge=found)):
            now = time.perf_counter()
            if ttft is None:
                ttft = (now - started) * 1000
            parts.append(delta)
            if first_sentence is None and splitter.feed(delta):
                first_sentence = (time.perf_counter() - started) * 1000
            if on_delta is not None:
                on_delta(delta)
    except AgentError as err:
        error = err
    if first_sentence is None and parts and splitter.flush():
        first_sentence = (time.perf_counter() - started) * 1000
    total = (time.perf_counter() - started) * 1000
    reply = "".join(parts)
    client.record_reply(heard_text=reply, interrupted=False)
    return TurnReport(reply, ttft, first_sentence, total, error)


def _write(delta: str) -> None:
    sys.stdout.write(delta)
    sys.stdout.flush()


def _exit_for(error: AgentError) -> int:
    return EXIT_UNAVAILABLE if isinstance(error, AgentUnreachableError) else EXIT_FAILURE


async def _one(client: AgentClient, text: str, as_json: bool, knowledge: Any = None) -> int:
    report = await timed_turn(client, text, None if as_json else _write, knowledge)
    if as_json:
        print_json(report.as_dict(client))
    else:
        sys.stdout.write("\n")
        if report.error is not None:
            print(f"edgevoice: {report.error.message} [{report.error.code}]", file=sys.stderr)
    return EXIT_OK if report.error is None else _exit_for(report.error)


async def _interactive(client: AgentClient, actions: RecordingActions, as_json: bool,
                       knowledge: Any = None) -> int:
    status = EXIT_OK
    if not as_json:
        print(f"chatting with the {client.provider} agent; end with Ctrl-D or 'stop'", file=sys.stderr)
    while True:
        if not as_json:
            print("you> ", end="", file=sys.stderr, flush=True)
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            return status
        text = line.strip()
        if not text:
            continue
        if not as_json:
            print("agent> ", end="", file=sys.stderr, flush=True)
        status = await _one(client, text, as_json, knowledge)
        if actions.restarted:
            actions.restarted = False
            client.reset_session()
            if not as_json:
                print("(new session)", file=sys.stderr)
        if actions.ended:
            if not as_json:
                print("(conversation ended)", file=sys.stderr)
            return status


async def _run(args: argparse.Namespace) -> int:
    config = load(args).config
    actions = RecordingActions(volume=config.audio.volume)
    client = build_agent(config, actions)
    knowledge = None
    if config.knowledge.enabled:  # the same lookups as the daemon's turns
        from edgevoice.device.knowledge import KnowledgeBase

        knowledge = KnowledgeBase(config.knowledge, state_dir=Path(config.device.state_dir))
        await asyncio.to_thread(knowledge.open)
    try:
        if args.text is not None:
            return await _one(client, args.text, args.json, knowledge)
        return await _interactive(client, actions, args.json, knowledge)
    finally:
        await client.aclose()
        if knowledge is not None:
            knowledge.close()


def _chat(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))
