"""A real Home Assistant 2025.4 adopts the device over the ESPHome API (``./dev test-ha``).

HA's ESPHome integration adds the device through its config flow (with the Noise key),
an ``assist_satellite`` entity appears, ``assist_satellite.announce`` plays on the
device (HA's own pre-announce chime, an MP3, and our WAV), and HA's log has no warning
about the device."""

from __future__ import annotations

import asyncio
import base64
import re
import time
from pathlib import Path

import pytest
from aiohttp import web
from support.agent_server import serve
from support.device_harness import running_device, voice
from support.home_assistant import running_home_assistant
from support.ports import free_port

from edgevoice.audio.io.wav import write_wav
from edgevoice.device.events import EventType

pytestmark = pytest.mark.homeassistant

KEY = base64.b64encode(bytes(range(100, 132))).decode()


async def test_home_assistant_adopts_the_device_and_announces_on_it(tmp_path: Path) -> None:
    api_port = free_port()
    message = tmp_path / "message.wav"
    write_wav(message, voice("hello there"), 16000)

    async def send_message(_: web.Request) -> web.FileResponse:
        return web.FileResponse(message)

    app = web.Application()
    app.router.add_get("/message.wav", send_message)
    overrides = ["listen.mode=wakeword", "listen.wakeword=okay_nabu", "esphome.enabled=true",
                 "esphome.host=127.0.0.1", f"esphome.port={api_port}", "esphome.zeroconf=false",
                 f"esphome.encryption_key={KEY}", "esphome.name=edgevoice-test", "device.name=Test Satellite"]
    async with (serve(app) as media_url, running_device(tmp_path, overrides) as device,
                running_home_assistant(tmp_path, free_port()) as ha):
        entry = await ha.add_integration("esphome", {
            "user": {"host": "127.0.0.1", "port": api_port},
            "encryption_key": {"noise_psk": KEY},
        })
        assert entry["type"] == "create_entry", entry
        adopted_at = len(ha.log().splitlines())
        await device.wait_for(EventType.ESPHOME_CLIENT, timeout_s=120, status="subscribed")
        satellite = None
        deadline = time.monotonic() + 60
        while satellite is None and time.monotonic() < deadline:
            satellite = next((s for s in await ha.states()
                              if s["entity_id"].startswith("assist_satellite.")), None)
            await asyncio.sleep(0.5)
        assert satellite is not None, "no assist_satellite entity"
        assert satellite["state"] == "idle"
        players = [s for s in await ha.states() if s["entity_id"].startswith("media_player.")]
        assert players and abs(players[0]["attributes"]["volume_level"] - device.daemon.speaker.volume) < 0.01
        # The service returns once the device has played it (VoiceAssistantAnnounceFinished).
        await ha.call("POST", "/api/services/assist_satellite/announce", {
            "entity_id": satellite["entity_id"], "media_id": f"{media_url}/message.wav"}, timeout_s=120)
        done = [e for e in device.of(EventType.REPLY_DONE) if e.data["utterance_id"].startswith("announce")]
        assert done and done[-1].data["status"] == "completed"
        played = device.daemon.speaker.progress(done[-1].data["utterance_id"])
        seconds = sum(p.played for p in played) / 16000
        assert seconds > len(voice("hello there")) / 16000  # the chime and the message
    lines = ha.log().splitlines()

    def about_us(line: str) -> bool:
        return bool(re.search(r"\b(WARNING|ERROR)\b", line)
                    and re.search(r"esphome|assist_satellite|edgevoice|127\.0\.0\.1", line, re.I))

    # The config flow's own probes before the key is entered (a plaintext hello, then the
    # all-zero key HA sends to learn the device's name) are logged by aioesphomeapi as it
    # does for any encrypted ESPHome device; from adoption on, nothing about the device.
    probes = ("Connection requires encryption", "Invalid encryption key: received_name=edgevoice-test")
    during_flow = [line for line in lines[:adopted_at]
                   if about_us(line) and not any(p in line for p in probes)]
    after = [line for line in lines[adopted_at:] if about_us(line)]
    assert not during_flow and not after, "\n".join(during_flow + after)
