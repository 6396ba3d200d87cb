"""Which config keys apply on reload, and how (SIGHUP and MQTT ``set_config``).

``docs/config.md`` promises: a key marked *restart* takes effect when the daemon
restarts, every other key applies on reload. This module keeps that promise
explicit. Every key without the restart mark is either

- in :data:`READ_AT_USE`: the daemon reads it from ``daemon.config`` each time it
  needs it, so swapping the config is all a reload has to do; or
- in :data:`APPLIERS`: a function that carries the new value into the running
  object that holds it. Changes to the listener go through ``front.control(...)``,
  so they happen on the front-end thread that owns it, before its next frame.

``tests/config/test_config_live_keys.py`` fails when a key is in neither, so a new
key has to choose (or be marked ``restart=True``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from edgevoice.audio.hearing.bargein import BargeInSettings
from edgevoice.audio.hearing.endpoint import EndpointSettings
from edgevoice.audio.hearing.events import HearingEvent
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.modes import ButtonMode
from edgevoice.audio.hearing.vad import QuietGate
from edgevoice.audio.hearing.vad_energy import EnergyVad
from edgevoice.audio.speaking.earcons import Earcon
from edgevoice.device.agents import AgentClient
from edgevoice.device.assembly.conversation import conversation_settings
from edgevoice.device.assembly.echo import barge_in_settings
from edgevoice.device.assembly.hearing import endpoint_settings
from edgevoice.device.assembly.speaking import apply_splitting, enabled_earcons
from edgevoice.device.config import Config
from edgevoice.device.config.fields import check_of
from edgevoice.device.config.sections.echo import BargeInConfig
from edgevoice.device.events import EventType
from edgevoice.device.runtime.bargein import BargeInMonitor
from edgevoice.device.runtime.state import State

if TYPE_CHECKING:
    from edgevoice.device.runtime.daemon import Daemon

_LOGGER = logging.getLogger(__name__)

Applier = Callable[["Daemon", Config, Config], None]

# Keys read from daemon.config at each use: nothing to do but swap the config.
READ_AT_USE: dict[str, str] = {
    "gpio.double_press_mutes": "Daemon._on_button, at each double press",
}


def keys_of(config: Config) -> list[str]:
    """Every key, as ``section.key``."""
    return [f"{section.name}.{field.name}"
            for section in dataclasses.fields(Config)
            for field in dataclasses.fields(getattr(config, section.name))]


def changed_keys(old: Config, new: Config) -> list[str]:
    keys: list[str] = []
    for section in dataclasses.fields(Config):
        before, after = getattr(old, section.name), getattr(new, section.name)
        if before != after:
            keys.extend(f"{section.name}.{field.name}" for field in dataclasses.fields(before)
                        if getattr(before, field.name) != getattr(after, field.name))
    return keys


def is_restart_key(config: Config, key: str) -> bool:
    """Whether ``key`` (``section.key``) is marked ``restart=True``."""
    section, name = key.split(".", 1)
    for field in dataclasses.fields(getattr(config, section)):
        if field.name == name:
            check = check_of(field)
            return check is not None and check.restart
    raise KeyError(key)


def apply_live(daemon: Daemon, old: Config, new: Config) -> list[str]:
    """Apply every changed live key to the running daemon (``daemon.config`` is already
    ``new``); return the changed keys that need a restart."""
    changed = changed_keys(old, new)
    done: list[Applier] = []
    for key in changed:
        for applier in APPLIERS.get(key, ()):
            if applier not in done:
                done.append(applier)
                applier(daemon, old, new)
    return [key for key in changed if is_restart_key(new, key)]


# --- the appliers: event loop side ---------------------------------------------------------


def _volume(daemon: Daemon, old: Config, new: Config) -> None:
    if daemon.speaker is not None:
        daemon.speaker.volume = new.audio.volume


def _conversation(daemon: Daemon, old: Config, new: Config) -> None:
    conversation = daemon.conversation
    if conversation is None:
        return
    # listen.mode needs a restart (the wake word model is loaded at start): keep the running one.
    conversation.settings = dataclasses.replace(conversation_settings(new), mode=conversation.settings.mode)


def _splitting(daemon: Daemon, old: Config, new: Config) -> None:
    if daemon.conversation is not None:
        apply_splitting(daemon.conversation.replies, new.tts)


def _earcons(daemon: Daemon, old: Config, new: Config) -> None:
    if daemon.conversation is not None:
        earcons = daemon.conversation.earcons
        earcons.enabled = frozenset(Earcon(name) for name in enabled_earcons(new.earcons))
        earcons.level = new.earcons.level


def _mqtt(daemon: Daemon, old: Config, new: Config) -> None:
    if daemon.mqtt is not None:  # read at use: each event, each telemetry period
        daemon.mqtt.config = dataclasses.replace(daemon.mqtt.config,
                                                 telemetry_interval_s=new.mqtt.telemetry_interval_s,
                                                 publish_transcripts=new.mqtt.publish_transcripts)


def _arbitration(daemon: Daemon, old: Config, new: Config) -> None:
    arbiter = daemon.mqtt.arbiter if daemon.mqtt is not None else None
    if arbiter is not None:  # read at each wake word's claim
        arbiter.window_ms = new.arbitration.window_ms


def _agent(daemon: Daemon, old: Config, new: Config) -> None:
    """The agent client is rebuilt with the new settings and takes over the session
    (id, history) between replies: a reply in flight finishes with the old one."""
    from edgevoice.device.agents import build_agent

    try:
        agent = build_agent(new, daemon.control, operator_desk=daemon.operator_desk)
    except Exception as err:
        _LOGGER.error("reload: the agent settings were not applied, keeping the running agent: %s", err)
        daemon.bus.emit(EventType.ERROR, source="config", code="agent_config_invalid", message=str(err))
        return
    daemon.swap_agent_soon(agent)


def _console(daemon: Daemon, old: Config, new: Config) -> None:
    """The console reads its section at use (each event, each new socket)."""
    if daemon.console is not None:
        daemon.console.apply_config(new.console, new.operator)


async def swap_agent_when_idle(daemon: Daemon, agent: AgentClient) -> None:
    """Wait until no reply is in flight, then put ``agent`` in place of the running one."""
    conversation = daemon.conversation
    changed = asyncio.Event()
    unsubscribe = daemon.bus.subscribe(
        lambda event: changed.set() if event.type == EventType.STATE_CHANGED else None)
    try:
        while conversation is not None and conversation.state in (State.THINKING, State.SPEAKING):
            changed.clear()
            await changed.wait()
    except asyncio.CancelledError:
        await agent.aclose()  # a newer reload replaced it
        raise
    finally:
        unsubscribe()
    old = daemon.agent
    if old is not None:
        agent.take_session(old)
    daemon.agent = agent
    if conversation is not None:
        conversation.agent = agent
    _LOGGER.info("reload: the %s agent took over session %s", agent.provider, agent.session_id)
    if old is not None:
        await old.aclose()


def _listener(daemon: Daemon, old: Config, new: Config) -> None:
    """The listener's VAD gate, endpointing, listen timings and recognizer threshold."""
    conversation = daemon.conversation
    if conversation is None:
        return
    if new.vad.release_threshold > new.vad.threshold:  # build_vad refuses it at start
        _LOGGER.error("reload: vad.release_threshold %s exceeds vad.threshold %s; VAD thresholds kept",
                      new.vad.release_threshold, new.vad.threshold)
        vad = old.vad
    else:
        vad = new.vad
    conversation.front.control(partial(
        _set_listener,
        threshold=vad.threshold,
        release_threshold=vad.release_threshold,
        energy_margin_db=new.vad.energy_margin_db,
        idle_gate_db=new.vad.idle_gate_db,
        endpoint=endpoint_settings(new.endpoint),
        wake_timeout_s=new.listen.wake_timeout_s,
        follow_up_s=new.listen.follow_up_s,
        button_mode=ButtonMode(new.listen.button_mode),
        low_confidence=new.asr.low_confidence,
        early_final_ms=new.asr.early_final_ms,
        early_decode_ms=new.asr.early_decode_ms,
    ))
    if old.asr.streaming != new.asr.streaming:
        conversation.front.control(partial(_set_streaming, conversation.front.control, new.asr.streaming))


def _barge_in(daemon: Daemon, old: Config, new: Config) -> None:
    if daemon.conversation is not None:
        settings = barge_in_settings(new.barge_in)
        daemon.conversation.front.control(partial(_set_barge_in, daemon.conversation.barge_in, settings))


# --- front-end controls: run on the front-end thread, before its next frame -----------------


def _set_listener(listener: Listener, *, threshold: float, release_threshold: float,
                  energy_margin_db: float, idle_gate_db: float, endpoint: EndpointSettings,
                  wake_timeout_s: float, follow_up_s: float, button_mode: ButtonMode,
                  low_confidence: float, early_final_ms: int, early_decode_ms: int) -> list[HearingEvent]:
    vad = listener.vad
    vad.gate.threshold, vad.gate.release_threshold = threshold, release_threshold
    if isinstance(vad.engine, EnergyVad):
        vad.engine.margin_db = energy_margin_db
    elif idle_gate_db <= 0:
        vad.quiet = None
    elif vad.quiet is None:
        vad.quiet = QuietGate(idle_gate_db)
    else:
        vad.quiet.open_db = idle_gate_db
    listener.endpointer.apply(endpoint)
    listener.wake_timeout_s = wake_timeout_s
    listener.follow_up_s = follow_up_s
    listener.button_mode = button_mode
    if listener.asr is not None:
        listener.asr.low_confidence = low_confidence
    listener.early_final_ms = early_final_ms
    listener.early_decode_ms = early_decode_ms
    return []


def _set_streaming(control: Callable[[Callable[[Listener], list[HearingEvent]]], None],
                   streaming: bool, listener: Listener) -> list[HearingEvent]:
    """Streaming on or off between turns: a turn in progress finishes the way it began."""
    if listener.in_turn:
        control(partial(_set_streaming, control, streaming))  # again before the next frame
    else:
        listener.streaming = streaming
    return []


def _set_barge_in(monitor: BargeInMonitor, settings: BargeInSettings,
                  listener: Listener) -> list[HearingEvent]:
    """The barge-in detector's settings, changed on the thread that feeds it (its speech in
    progress and its mode carry over)."""
    monitor.detector.settings = settings
    return []


def _knowledge(daemon: Daemon, old: Config, new: Config) -> None:
    """Retrieval's thresholds and top_k, read by the knowledge base and the local agent."""
    if daemon.knowledge is not None:
        daemon.knowledge.config = new.knowledge
    if daemon.agent is not None and hasattr(daemon.agent, "answer_score"):
        daemon.agent.answer_score = new.knowledge.answer_score


def _table() -> dict[str, tuple[Applier, ...]]:
    groups: list[tuple[Applier, tuple[str, ...]]] = [
        (_volume, ("audio.volume",)),
        (_conversation, ("conversation.session_idle_reset_s", "conversation.failure_phrase",
                         "conversation.log_transcripts", "listen.follow_up_s", "listen.button_mode",
                         "llm.speculate", "llm.speculate_margin_ms")),
        (_splitting, ("tts.sentence_gap_ms", "tts.max_first_sentence_chars", "tts.first_phrase_chars",
                      "tts.first_wait_ms", "tts.first_cut_words", "tts.follow_growth",
                      "tts.min_follow_chars", "tts.cut_edge_ms", "tts.max_sentence_chars",
                      "tts.max_chunk_chars")),
        (_earcons, ("earcons.wake", "earcons.listening", "earcons.thinking", "earcons.error",
                    "earcons.reset", "earcons.level")),
        (_mqtt, ("mqtt.telemetry_interval_s", "mqtt.publish_transcripts")),
        (_knowledge, ("knowledge.top_k", "knowledge.min_score", "knowledge.answer_score")),
        (_arbitration, ("arbitration.window_ms",)),
        (_agent, ("device.resource_id",
                  *(f"llm.{k}" for k in ("provider", "system_prompt", "low_confidence_note",
                                         "max_reply_chars", "history_turns", "summary_after_turns",
                                         "tools", "max_tool_rounds", "gpio_outputs")),
                  *(f"agent.{k}" for k in ("url", "api_key", "timeout_ms", "skill", "verify_tls",
                                           "ca_file")),
                  *(f"openai.{k}" for k in ("base_url", "model", "api_key", "reasoning_effort",
                                            "temperature", "max_tokens", "timeout_ms",
                                            "idle_timeout_ms", "verify_tls", "ca_file")),
                  *(f"ollama.{k}" for k in ("base_url", "model", "keep_alive", "temperature",
                                            "num_ctx", "num_predict", "seed", "timeout_ms",
                                            "idle_timeout_ms")),
                  *(f"homeassistant.{k}" for k in ("url", "token", "language", "agent_id",
                                                   "timeout_ms", "verify_tls")),
                  "local.word_delay_ms", "local.name", "operator.fallback", "operator.timeout_s")),
        (_console, ("console.transcripts", "console.command_rate", "console.command_burst",
                    "console.allowed_origins", "operator.quick_replies")),
        (_listener, ("vad.threshold", "vad.release_threshold", "vad.energy_margin_db",
                     "vad.idle_gate_db", "endpoint.min_speech_ms", "endpoint.end_silence_ms",
                     "endpoint.hold_silence_ms", "endpoint.max_turn_s", "endpoint.pre_roll_ms",
                     "listen.wake_timeout_s", "listen.follow_up_s", "listen.button_mode",
                     "asr.low_confidence", "asr.early_final_ms", "asr.early_decode_ms",
                     "asr.streaming")),
        (_barge_in, tuple(f"barge_in.{f.name}" for f in dataclasses.fields(BargeInConfig)
                          if not ((check := check_of(f)) is not None and check.restart))),
    ]
    table: dict[str, tuple[Applier, ...]] = {}
    for applier, keys in groups:
        for key in keys:
            table[key] = (*table.get(key, ()), applier)
    return table


# Key → what carries its new value into the running daemon (in order).
APPLIERS: dict[str, tuple[Applier, ...]] = _table()
