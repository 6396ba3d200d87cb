"""One whole daemon in its own simulated room at 1x real time, in its own process: a
device of a fleet for the arbitration benchmark.

Each device of a real room is its own machine, so each daemon here is its own Python (its
own GIL, event loop, audio and front-end threads); its room runs at speed 1, because
arbitration is wall clock over the broker. The parent talks to it in JSON lines:

- stdin: ``{"op": "say", "text": ..., "at": <time.monotonic()>, "gain_db": ...}`` puts the
  talker into this room when the wall clock reaches ``at`` (CLOCK_MONOTONIC is one clock
  for every process of the machine); ``{"op": "stop"}`` (or EOF) stops the daemon.
- stdout: ``{"type": "ready"}``, ``{"type": "peers", "peers": [...]}`` whenever the devices
  this one knows in its room change, and the daemon's events of :data:`FORWARDED`, each
  with ``mono`` (``time.monotonic()`` when emitted) and ``audio_s`` (the room's clock).

    python tests/support/room_daemon.py WORKDIR OVERRIDE...
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.device_harness import PHRASES, WAKE_PHRASE, voice

from edgevoice.audio.io.room import SimulatedRoom
from edgevoice.device.config import load_config
from edgevoice.device.events import Event, EventType
from edgevoice.device.runtime.arbitration_hook import ARBITRATED_EVENT
from edgevoice.device.runtime.daemon import Daemon

# What the benchmark scores, and what says the machine could not keep up at 1x.
FORWARDED = frozenset({EventType.WAKE_WORD, ARBITRATED_EVENT, EventType.STATE_CHANGED,
                       EventType.ERROR, EventType.TRANSCRIPT_USER, EventType.AUDIO_XRUN,
                       EventType.AUDIO_QUEUE_DROPPED})
_OUT = threading.Lock()


def send(body: dict[str, Any]) -> None:
    with _OUT:  # the stdin thread and the event loop both write
        sys.stdout.write(json.dumps(body, default=str) + "\n")
        sys.stdout.flush()


def read_commands(room: SimulatedRoom, loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """The stdin thread: talkers go straight into the room (add_talker is thread-safe)."""
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "say":
            after = max(0.0, float(command["at"]) - time.monotonic())
            room.add_talker(voice(command["text"]), after_s=after, gain_db=float(command["gain_db"]))
        elif command["op"] == "stop":
            break
    loop.call_soon_threadsafe(stop.set)


async def watch_peers(daemon: Daemon) -> None:
    known: list[str] | None = None
    while True:
        arbiter = daemon.mqtt.arbiter if daemon.mqtt is not None else None
        if arbiter is not None:
            peers = sorted(arbiter.room.peers(time.monotonic()))
            if peers != known:
                known = peers
                send({"type": "peers", "peers": peers})
        await asyncio.sleep(0.1)


async def main(workdir: Path, extra: list[str]) -> None:
    for phrase in (*PHRASES, WAKE_PHRASE):
        voice(phrase)  # synthesized before the room's clock runs
    grammar = "[" + ", ".join(f'"{p}"' for p in PHRASES) + "]"
    overrides = (
        "audio.backend=simulated",
        f"device.state_dir={workdir / 'state'}",
        "gpio.enabled=false",
        "conversation.session_idle_reset_s=0",
        "asr.engine=pocketsphinx",
        f"asr.grammar={grammar}",
        *extra,
    )
    config_file = workdir / "config.toml"  # the parent made the folder
    config_file.touch()
    loaded = load_config(config_file, overrides)
    room = SimulatedRoom(160, speed=1.0, echo_gain_db=-10.0, echo_delay_ms=20, rt60_s=0.2,
                         noise_dbfs=-60, seed=1)
    stop = asyncio.Event()

    def forward(event: Event) -> None:
        if event.type in FORWARDED:
            send({"type": event.type, "data": event.data, "mono": time.monotonic(), "audio_s": room.now_s})

    daemon = Daemon(loaded, config_path=config_file, overrides=overrides, backend=room,
                    root=workdir, on_event=forward)
    runner = asyncio.create_task(daemon.run(), name="device")
    ready = asyncio.create_task(daemon.ready.wait())
    await asyncio.wait({runner, ready}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
    if runner.done():
        await runner
    peers = asyncio.create_task(watch_peers(daemon), name="peers")
    send({"type": "ready"})
    threading.Thread(target=read_commands, args=(room, asyncio.get_running_loop(), stop),
                     name="commands", daemon=True).start()
    waiting = asyncio.create_task(stop.wait())
    await asyncio.wait({runner, waiting}, return_when=asyncio.FIRST_COMPLETED)
    peers.cancel()
    waiting.cancel()
    daemon.stop()
    await asyncio.wait_for(runner, 30)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2:]))
