"""Keys without the restart mark apply on reload (SIGHUP, MQTT set_config) in the running
daemon, as docs/config.md promises: the listener's VAD gate, endpointing, listen timings,
streaming and recognizer threshold change on the front-end thread; earcons and TTS
chunking on the event loop; the agent client is rebuilt and takes over the session.
Keys marked restart are reported and leave the running objects alone."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from support.device_harness import running_device

from edgevoice.audio.hearing.modes import ButtonMode, ListenMode
from edgevoice.audio.speaking.earcons import Earcon
from edgevoice.device.agents.agent_http import HttpAgentClient
from edgevoice.device.agents.base import Exchange
from edgevoice.device.events import EventType


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(200):  # the front end applies a control before its next frame
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not applied: {what}")


async def test_reload_reaches_the_listener_earcons_synthesizer_and_agent(tmp_path: Path) -> None:
    async with running_device(tmp_path) as device:
        daemon = device.daemon
        conversation = daemon.conversation
        assert conversation is not None and daemon.agent is not None
        listener = conversation.front.listener
        vad, endpointer = listener.vad, listener.endpointer
        assert vad.gate.threshold == 0.5 and vad.quiet is not None
        assert endpointer.settings.end_silence_ms == 600 and listener.streaming
        assert endpointer.settings.hold_silence_ms == 1600
        old_agent, session = daemon.agent, daemon.agent.session_id
        old_agent.history.append(Exchange("what time is it", "It is noon."))

        config_text = (
            "[vad]\nthreshold = 0.7\nrelease_threshold = 0.3\nidle_gate_db = 0\n"
            "[endpoint]\nend_silence_ms = 900\nmin_speech_ms = 200\nhold_silence_ms = 2400\n"
            "[listen]\nwake_timeout_s = 7.5\nbutton_mode = \"press\"\n"
            "[asr]\nstreaming = false\nlow_confidence = 0.4\n"
            "[earcons]\nwake = false\nlevel = 0.1\n"
            "[tts]\nmax_chunk_chars = 80\n"
            "[device]\nresource_id = \"kitchen\"\n[llm]\nsystem_prompt = \"Answer in one word.\"\n"
        )
        (tmp_path / "config.toml").write_text(config_text)
        await daemon.control.reload()
        await _until(lambda: vad.gate.threshold == 0.7, "vad.threshold")
        assert vad.gate.release_threshold == 0.3
        assert vad.quiet is None  # idle_gate_db = 0: score everything
        assert endpointer.settings.end_silence_ms == 900 and endpointer.settings.min_speech_ms == 200
        assert endpointer.settings.hold_silence_ms == 2400  # a fleet retunes the text hold live
        assert listener.wake_timeout_s == 7.5 and listener.button_mode is ButtonMode.PRESS
        assert listener.asr is not None and listener.asr.low_confidence == 0.4
        await _until(lambda: not listener.streaming, "asr.streaming (between turns)")
        assert Earcon.WAKE not in conversation.earcons.enabled and conversation.earcons.level == 0.1
        assert conversation.replies.synthesizer.max_chunk_chars == 80
        assert not conversation.settings.push_to_talk  # button_mode = press
        await _until(lambda: conversation.agent is not old_agent, "device.resource_id, llm.system_prompt")
        agent = conversation.agent
        assert isinstance(agent, HttpAgentClient) and agent.resource_id == "kitchen"
        assert daemon.agent is agent
        assert conversation.agent.session_id == session  # the session carries on
        assert [e.user for e in conversation.agent.history] == ["what time is it"]
        reloaded = device.of(EventType.CONFIG_RELOADED)
        assert reloaded and reloaded[-1].data["restart_keys"] == []

        # the text hold alone: a fleet retunes it without a restart
        (tmp_path / "config.toml").write_text(config_text.replace("hold_silence_ms = 2400",
                                                                  "hold_silence_ms = 0"))
        await daemon.control.reload()
        await _until(lambda: endpointer.settings.hold_silence_ms == 0, "endpoint.hold_silence_ms")


async def test_set_config_reports_restart_keys_and_applies_the_live_ones(tmp_path: Path) -> None:
    async with running_device(tmp_path) as device:
        daemon = device.daemon
        conversation = daemon.conversation
        assert conversation is not None
        listener = conversation.front.listener
        engine = listener.vad.engine
        result = await daemon.control.set_config({
            "vad": {"engine": "energy"},
            "listen": {"mode": "wakeword"},
            "endpoint": {"pre_roll_ms": 500},
        })
        assert sorted(result["restart_keys"]) == ["listen.mode", "vad.engine"]
        assert result["restart_required"]
        await _until(lambda: listener.endpointer.settings.pre_roll_ms == 500, "endpoint.pre_roll_ms")
        # The restart keys wait for the restart: same engine, same listen mode everywhere.
        assert listener.vad.engine is engine
        assert listener.mode is ListenMode.ALWAYS
        assert conversation.settings.mode.value == "always"
