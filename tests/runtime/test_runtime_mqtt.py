"""The real daemon on a real mosquitto: its status, state and telemetry, and fleet
commands carried out by the conversation itself (say, interrupt, volume, mute, reset,
set_config persisted to the daemon's own config file)."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

from support.device_harness import running_device
from support.mosquitto import Broker, password_of
from support.mqtt_fakes import Observer

from edgevoice.device.events import EventType


async def test_fleet_commands_drive_the_running_device(tmp_path: Path, broker: Broker) -> None:
    observer = Observer(broker)
    observer.subscribe("edgevoice/#")
    overrides = [
        f"mqtt.url={broker.url}", "mqtt.username=dev1", f"mqtt.password={password_of('dev1')}",
        "mqtt.telemetry_interval_s=0.5", "device.id=dev1", "llm.provider=local",
    ]
    try:
        async with running_device(tmp_path, overrides) as device:
            status = (await observer.await_on("edgevoice/dev1/status", timeout_s=20))[-1].json()
            assert status["state"] == "online"

            async def command(name: str, args: dict[str, object], request_id: str) -> dict[str, object]:
                observer.publish(f"edgevoice/dev1/cmd/{name}", {"id": request_id, **args})
                answer = await observer.await_for(
                    lambda m: m.topic == "edgevoice/dev1/cmd_result" and m.json().get("id") == request_id,
                    timeout_s=20)
                return answer[-1].json()

            assert (await command("ping", {}, "p1"))["ok"] is True
            answer = await command("say", {"text": "Hello from the fleet. This is a longer message."}, "s1")
            assert answer["ok"] is True
            await device.wait_for(EventType.REPLY_STARTED)
            assert (await command("interrupt", {}, "i1"))["ok"] is True
            done = await device.wait_for(EventType.REPLY_DONE)
            assert done.data["status"] == "interrupted"

            assert (await command("set_volume", {"level": 0.4}, "v1"))["ok"] is True
            assert device.daemon.speaker is not None and device.daemon.speaker.volume == 0.4
            assert (await command("mute", {"mic": True}, "m1"))["ok"] is True
            assert device.daemon.conversation is not None and device.daemon.conversation.muted
            state = await observer.await_for(
                lambda m: m.topic == "edgevoice/dev1/state" and m.json().get("mic_muted") is True, 20)
            assert state[-1].json()["volume"] == 0.4
            assert (await command("mute", {"mic": False}, "m2"))["ok"] is True

            before = device.daemon.agent.session_id if device.daemon.agent else ""
            assert (await command("reset_session", {}, "r1"))["ok"] is True
            assert device.daemon.agent is not None and device.daemon.agent.session_id != before

            patch = {"patch": {"conversation": {"failure_phrase": "Try again later."},
                               "tts": {"first_phrase_chars": 45, "sentence_gap_ms": 80}}}
            result = await command("set_config", patch, "c1")
            assert result["ok"] is True
            assert result["result"]["restart_required"] is False
            written = tomllib.loads((tmp_path / "config.toml").read_text())
            assert written["conversation"]["failure_phrase"] == "Try again later."
            assert device.daemon.conversation.settings.failure_phrase == "Try again later."
            # the splitter limits are live too: the next reply is cut by the new ones
            replies = device.daemon.conversation.replies
            assert (replies.first_phrase_chars, replies.sentence_gap_ms) == (45, 80)

            bad = await command("set_config", {"patch": {"audio": {"volume": 7}}}, "c2")
            assert bad["ok"] is False and bad["error"]["code"] == "validation_failed"

            telemetry = await observer.await_for(  # generous waits: CI machines are loaded
                lambda m: m.topic == "edgevoice/dev1/telemetry" and m.json()["runtime"]["state"] == "idle",
                timeout_s=20)
            runtime = telemetry[-1].json()["runtime"]
            assert runtime["barge_ins"] == 0 and "input_dbfs" in runtime and "xruns" in runtime
            await asyncio.sleep(0)
    finally:
        observer.close()
