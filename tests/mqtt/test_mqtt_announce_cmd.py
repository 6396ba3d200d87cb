"""``announce`` / ``listen`` and the diagnostics commands at the router: every bad input
answers a clear code and reaches nothing (a target that records what it was asked)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.mqtt_fakes import FakeTarget

from edgevoice.device.events import EventBus
from edgevoice.device.mqtt.announce_cmd import AnnounceTarget
from edgevoice.device.mqtt.commands import CommandRouter
from edgevoice.device.mqtt.remote import DiagnosticsTarget


class RoomTarget(FakeTarget):
    def __init__(self, bus: EventBus, path: Path) -> None:
        super().__init__(bus, path)
        self.calls: list[tuple[str, Any]] = []

    async def announce(self, *, text: str, url: str, then_listen: bool, urgent: bool,
                       wait_s: float) -> dict[str, Any]:
        self.calls.append(("announce", (text, url, then_listen, urgent, wait_s)))
        return {"played": True}

    async def listen(self) -> dict[str, Any]:
        self.calls.append(("listen", None))
        return {"listening": True}

    async def doctor(self, only: tuple[str, ...]) -> dict[str, Any]:
        self.calls.append(("doctor", only))
        return {"ok": True, "checks": []}

    async def aec_selftest(self) -> dict[str, Any]:
        self.calls.append(("aec_selftest", None))
        return {}

    async def logs(self, lines: int) -> dict[str, Any]:
        self.calls.append(("logs", lines))
        return {"lines": []}


@pytest.fixture
def target(tmp_path: Path) -> RoomTarget:
    return RoomTarget(EventBus(), tmp_path / "c.toml")


def router(target: RoomTarget) -> CommandRouter:
    return CommandRouter(target, device_id="dev1", rate=100.0, burst=100)


def test_the_target_implements_both_protocols(target: RoomTarget) -> None:
    assert isinstance(target, AnnounceTarget) and isinstance(target, DiagnosticsTarget)


async def test_good_requests_reach_the_target(target: RoomTarget) -> None:
    r = router(target)
    assert (await r.handle("announce", b'{"text": "Dinner is ready"}')).ok
    assert (await r.handle("announce", json.dumps({"url": "http://127.0.0.1:9/a.wav", "then_listen": True,
                                                   "priority": "urgent", "wait_s": 5}).encode())).ok
    assert (await r.handle("listen", b"")).ok
    assert (await r.handle("doctor", b'{"only": "disk, soc"}')).ok
    assert (await r.handle("doctor", b"{}")).ok
    assert (await r.handle("logs", b'{"lines": 5}')).ok
    assert (await r.handle("logs", b"{}")).ok
    assert target.calls == [
        ("announce", ("Dinner is ready", "", False, False, 120.0)),
        ("announce", ("", "http://127.0.0.1:9/a.wav", True, True, 5.0)),
        ("listen", None),
        ("doctor", ("disk", "soc")),
        ("doctor", ("audio", "models", "agent", "mqtt", "gpio", "soc", "clock", "disk")),
        ("logs", 5), ("logs", 100),
    ]


@pytest.mark.parametrize(("name", "body", "code"), [
    ("announce", {}, "missing_argument"),
    ("announce", {"text": "a", "url": "http://x/a.wav"}, "invalid_argument"),
    ("announce", {"text": ""}, "invalid_argument"),
    ("announce", {"text": 5}, "invalid_argument"),
    ("announce", {"text": "x" * 2001}, "invalid_argument"),
    ("announce", {"url": "file:///etc/passwd"}, "invalid_argument"),
    ("announce", {"url": "not a url"}, "invalid_argument"),
    ("announce", {"text": "a", "priority": "high"}, "invalid_argument"),
    ("announce", {"text": "a", "then_listen": "yes"}, "invalid_argument"),
    ("announce", {"text": "a", "wait_s": -1}, "invalid_argument"),
    ("announce", {"text": "a", "wait_s": 601}, "invalid_argument"),
    ("announce", {"text": "a", "volume": 1}, "invalid_argument"),
    ("listen", {"now": True}, "invalid_argument"),
    ("doctor", {"only": "audio,bogus"}, "invalid_argument"),
    ("doctor", {"only": ","}, "invalid_argument"),
    ("doctor", {"only": ["audio"]}, "invalid_argument"),
    ("aec_selftest", {"probe_s": 2}, "invalid_argument"),
    ("logs", {"lines": 0}, "invalid_argument"),
    ("logs", {"lines": 1001}, "invalid_argument"),
    ("logs", {"lines": 1.5}, "invalid_argument"),
    ("logs", {"lines": True}, "invalid_argument"),
])
async def test_bad_inputs_answer_a_clear_code_and_change_nothing(
    target: RoomTarget, name: str, body: dict[str, Any], code: str
) -> None:
    answer = await router(target).handle(name, json.dumps({"id": "r", **body}).encode())
    assert not answer.ok and answer.error is not None
    assert answer.error["code"] == code, answer.error
    assert answer.error["message"]
    assert answer.request_id == "r"
    assert target.calls == []
