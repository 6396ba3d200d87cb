"""``edgevoice chat`` as a person runs it: a real process against the example server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_server import ThreadedExample, run_in_thread

CLI = [str(Path(sys.executable).with_name("edgevoice"))]


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedExample]:
    running = run_in_thread()
    yield running
    running.stop()


def chat(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "chat", *args], input=stdin, capture_output=True, text=True,
                          timeout=60, check=False)


def test_chat_json_against_the_agent_contract(server: ThreadedExample) -> None:
    assert server.running is not None
    url = server.running.url + "/agent"
    done = chat("--json", "--set", "llm.provider=agent", "--set", f"agent.url={url}", "tell me a long story")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["provider"] == "agent" and data["reply"].startswith("Here is a long answer.")
    assert 0 < data["ttft_ms"] <= data["first_sentence_ms"] <= data["total_ms"]
    assert "error" not in data and len(data["session_id"]) == 32


def test_chat_failure_is_an_error_object_and_exit_status() -> None:
    url = "http://nonexistent.invalid/agent"
    done = chat("--json", "--set", "llm.provider=agent", "--set", f"agent.url={url}", "hi")
    data = json.loads(done.stdout)
    assert done.returncode != 0 and data["error"]["code"] == "agent_dns" and data["reply"] == ""


def test_chat_interactive_keeps_one_session(server: ThreadedExample) -> None:
    assert server.running is not None
    url = server.running.url + "/v1"
    done = chat("--json", "--set", "llm.provider=openai", "--set", f"openai.base_url={url}",
                stdin="hello\nwhat time is it\n")
    turns = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and len(turns) == 2
    assert turns[0]["session_id"] == turns[1]["session_id"]
    assert turns[1]["reply"].startswith("It is ")


def test_chat_interactive_local_start_over_and_stop() -> None:
    done = chat("--json", "--set", "local.word_delay_ms=0",
                stdin="hello\nstart over\nwhat did I say\nstop\nnever reached\n")
    turns = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and len(turns) == 4  # "stop" ended the conversation
    assert all(t["provider"] == "local" for t in turns)
    assert turns[1]["session_id"] == turns[0]["session_id"] != turns[2]["session_id"]
    assert turns[2]["reply"] == "You haven't said anything yet."
    assert turns[3]["reply"] == "Okay, goodbye."
