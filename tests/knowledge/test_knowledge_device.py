"""The agent contract's ``context`` end to end: the whole daemon in the simulated room
(real VAD, pocketsphinx in phrase-list mode, piper), the museum knowledge base, and the
example agent server on loopback as the agent."""

from __future__ import annotations

import json
from pathlib import Path

from support.agent_server import example_server
from support.device_harness import running_device

from edgevoice.device.events import EventType

ROOT = Path(__file__).resolve().parents[2]
MUSEUM = ROOT / "examples" / "knowledge" / "museum"
ASKED = "where is the whale skeleton"
OTHER = "hello there"


async def test_a_matching_turn_carries_context_and_a_plain_one_none(tmp_path: Path) -> None:
    grammar = json.dumps([ASKED, OTHER])
    async with example_server(shape="sse") as server:
        overrides = [f"agent.url={server.url}/agent", f"asr.grammar={grammar}", "knowledge.enabled=true",
                     f"knowledge.paths={json.dumps([str(MUSEUM)])}",
                     f"knowledge.index={json.dumps(str(tmp_path / 'k.sqlite3'))}"]
        async with running_device(tmp_path, overrides) as device:
            device.say(ASKED)
            heard = await device.wait_for(EventType.TRANSCRIPT_USER)
            assert heard.data["text"] == ASKED
            await device.wait_for(EventType.REPLY_DONE)
            metrics = await device.wait_for(EventType.METRICS_TURN)
            device.say(OTHER)
            await device.wait_for(EventType.TRANSCRIPT_USER, text=OTHER)
            await device.wait_for(EventType.REPLY_DONE, timeout_s=60)
            second = [e for e in device.of(EventType.METRICS_TURN) if e is not metrics]
            bodies = server.state.bodies()
    first, plain = bodies
    assert first["text"] == ASKED
    assert "fin whale" in first["context"][0] and len(first["context"]) <= 3
    assert plain["text"] == OTHER and "context" not in plain
    assert metrics.data["knowledge_matched"] >= 1
    assert 0 < metrics.data["retrieval_ms"] < 1000
    assert "retrieved" in metrics.data["marks_s"] and "retrieval" in metrics.data["stages_ms"]
    assert not second or second[0].data["knowledge_matched"] == 0
