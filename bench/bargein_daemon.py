"""Barge-in through the whole daemon: many interruptions, onset to playback stopped.

``bench/aec/bargein_bench.py`` chains the canceller, Silero and the detector offline;
this runs the daemon itself (duplex loop, front-end thread, event loop, reply task) in
the simulated room at 1x with the built-in agent. Each trial: the person asks for a
story (a long reply); once the device has spoken a random 1-4 s of it, an espeak-ng
voice (not the device's) asks a short question over it at a random signal-to-echo
ratio between 0 and -10 dB (against the echo's level at the microphone); the trial
records whether a ``barge_in`` was taken, and the time from the true speech onset (on
the room's audio clock) to the ``playback_stopped`` mark. Then the person waits for the
reply to the question before the next trial. A ``barge_in`` while the person is silent
is a self-interruption.

    ./dev bench bargein_daemon [--trials N] [--seed S] [--set KEY=VALUE] [--alone-min M]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from voice_to_voice import start, stop  # bench/ is the script's folder

from edgevoice.device.events import Event, EventType
from edgevoice.device.runtime.demo import Line, synthesize_lines

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.hearing_audio import espeak_speech, rms_dbfs

STORY = "Please tell me a story."
QUESTIONS = ("Sorry, what time is it?", "Wait, what is the date today?", "Excuse me, how are you?",
             "Hold on, what is your name?")
ESPEAK_VOICES = ("en-us", "en-gb", "en-us+f3", "en-gb-x-rp")
ECHO_GAIN_DB = -10.0  # the bench room's echo path (voice_to_voice.start), unit-energy response
WAIT_S = 30.0


@dataclass(frozen=True, slots=True)
class Trial:
    onset_s: float
    ser_db: float
    after_s: float
    taken: bool
    onset_to_stopped_ms: float | None
    onset_to_barge_in_ms: float | None
    heard: str


class EventWatch:
    """The daemon's events as an async queue, with the barge-ins kept apart."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock  # the room's audio clock
        self.queue: asyncio.Queue[Event] = asyncio.Queue()
        self.barge_ins: list[Event] = []
        self.modes: list[str] = []  # the detector's mode changes (safe modes without a reference)

    def on_event(self, event: Event) -> None:
        if event.type == EventType.BARGE_IN:
            self.barge_ins.append(event)
        if event.type == EventType.BARGE_IN_MODE:
            self.modes.append(f"{event.data.get('mode')} at {self.clock():.1f} s")
        self.queue.put_nowait(event)

    async def wait_for(self, kind: str, timeout_s: float = WAIT_S) -> Event | None:
        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                event = await asyncio.wait_for(self.queue.get(), remaining)
            except TimeoutError:
                return None
            if event.type == kind:
                return event
        return None

    def drain(self) -> None:
        while not self.queue.empty():
            self.queue.get_nowait()


async def run(trials: int, seed: int, overrides: list[str], alone_min: float = 0.0) -> list[Trial]:
    rng = random.Random(seed)
    state = Path("/tmp/edgevoice-bench-state")
    await asyncio.to_thread(state.mkdir, exist_ok=True)
    daemon, room, runner, events = await start(["asr.engine=pocketsphinx", *overrides], state)
    person = EventWatch(lambda: room.now_s)
    daemon.bus.subscribe(person.on_event)
    # the request in the bundled voice, as `edgevoice demo`'s person says it (pocketsphinx
    # mis-hears espeak-ng's "tell me a story" often enough to spoil trials)
    story = synthesize_lines(daemon.config.tts.voice, None, (Line(STORY),), still=False)[STORY]
    # the echo's level at the mic: the device's voice at its volume through the room's path
    from edgevoice.audio.speaking.tts_piper import PiperTts
    from edgevoice.models import ModelKind, resolve_model

    voice = resolve_model(daemon.config.tts.voice, ModelKind.TTS)
    reply_level = rms_dbfs(PiperTts(voice.path, threads=1).synthesize(
        "Once upon a time, in a small village by the sea, there lived an old fisherman.").pcm)
    echo_dbfs = reply_level + 20.0 * math.log10(daemon.config.audio.volume + 1e-9) + ECHO_GAIN_DB
    results: list[Trial] = []
    talking: list[tuple[float, float]] = []  # (onset, end) of the person's questions
    try:
        for index in range(trials):
            person.drain()
            room.add_talker(story, start_s=room.now_s + 0.5)
            started = await person.wait_for(str(EventType.TRANSCRIPT_AGENT))
            if started is None or not str(started.data.get("text", "")).startswith("Once"):
                print(f"trial {index + 1}: no story to talk over ({started and started.data.get('text')!r}); "
                      "trial skipped", file=sys.stderr)
                await person.wait_for(str(EventType.REPLY_DONE))
                continue
            question = QUESTIONS[index % len(QUESTIONS)]
            speech = espeak_speech(question, ESPEAK_VOICES[index % len(ESPEAK_VOICES)],
                                   rng.choice((140, 160, 175)))
            ser = rng.uniform(-10.0, 0.0)
            after = rng.uniform(1.0, 4.0)
            onset = room.now_s + after
            before = len(person.barge_ins)
            room.add_talker(speech, start_s=onset, gain_db=echo_dbfs + ser - rms_dbfs(speech))
            talking.append((onset, onset + len(speech) / 16000))
            heard_event = await person.wait_for(str(EventType.TRANSCRIPT_USER), after + WAIT_S)
            barge = next((e for e in person.barge_ins[before:] if _during(e, talking[-1:])), None)
            await person.wait_for(str(EventType.REPLY_DONE))  # the reply to the question
            stopped = _interrupted_mark(events, "playback_stopped")
            results.append(Trial(
                onset_s=onset, ser_db=ser, after_s=after, taken=barge is not None,
                onset_to_stopped_ms=None if stopped is None or barge is None else (stopped - onset) * 1000,
                onset_to_barge_in_ms=None if barge is None
                else (float(barge.data["detected_s"]) - onset) * 1000,
                heard="" if heard_event is None else str(heard_event.data.get("text", "")),
            ))
            await asyncio.sleep(0.5)
        alone_barge_ins, alone_s = await _alone(person, room, story, alone_min)
    finally:
        await stop(daemon, runner)
    self_interruptions = sum(1 for e in person.barge_ins if not _during(e, talking))
    _print(results, self_interruptions, overrides)
    print(f"barge-in mode changes: {' -> '.join(person.modes) or 'none'}")
    if alone_min > 0:
        print(f"\nthe device talking alone (stories, nobody interrupting): {alone_s / 60:.1f} min of "
              f"replies, {alone_barge_ins} barge-in(s) (self-interruptions; target 0 in 10 min)")
    return results


async def _alone(person: EventWatch, room: Any, story: np.ndarray, minutes: float) -> tuple[int, float]:
    """Ask for stories and let them play out for ``minutes`` of replies: every barge-in
    is the device interrupting itself. Returns (barge-ins, seconds of replies)."""
    spoken = 0.0
    before = len(person.barge_ins)
    while spoken < minutes * 60.0:
        person.drain()
        room.add_talker(story, start_s=room.now_s + 0.5)
        if await person.wait_for(str(EventType.REPLY_STARTED)) is None:
            break
        began = room.now_s
        if await person.wait_for(str(EventType.REPLY_DONE), 120.0) is None:
            break
        spoken += room.now_s - began
        await asyncio.sleep(0.5)
    return len(person.barge_ins) - before, spoken


def _interrupted_mark(events: list[Event], mark: str) -> float | None:
    """The mark of the last interrupted turn's metrics, on the audio clock."""
    for event in reversed(events):
        if event.type == EventType.METRICS_TURN and event.data.get("status") == "interrupted":
            value = event.data.get("marks_s", {}).get(mark)
            return None if value is None else float(value)
    return None


def _during(event: Event, spans: list[tuple[float, float]]) -> bool:
    """The barge-in was detected while (or just after) the person spoke."""
    detected = float(event.data["detected_s"])
    return any(onset <= detected <= end + 1.0 for onset, end in spans)


def _print(results: list[Trial], self_interruptions: int, overrides: list[str]) -> None:
    settings = " ".join(overrides) or "defaults"
    print(f"\n## Barge-in through the whole daemon, simulated room at 1x ({settings})\n")
    print("| trial | onset s | SER dB | after s | taken | onset to barge_in ms "
          "| onset to playback stopped ms "
          "| heard |")
    print("|---|---|---|---|---|---|---|---|")
    for i, t in enumerate(results, 1):
        fmt = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
        print(f"| {i} | {t.onset_s:.1f} | {t.ser_db:.1f} | {t.after_s:.1f} | {'yes' if t.taken else 'NO'} | "
              f"{fmt(t.onset_to_barge_in_ms)} | {fmt(t.onset_to_stopped_ms)} | {t.heard} |")
    stops = [t.onset_to_stopped_ms for t in results if t.onset_to_stopped_ms is not None]
    taken = sum(t.taken for t in results)
    print(f"\nself-interruptions (a barge-in while the person was silent): {self_interruptions}")
    print(f"detected {taken}/{len(results)} ({100.0 * taken / max(1, len(results)):.0f} %, target >= 95 %); "
          f"onset to playback stopped: median {statistics.median(stops):.0f} ms, "
          f"p90 {float(np.percentile(stops, 90)):.0f} ms (target median <= 250)" if stops else "no barge-in")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--alone-min", type=float, default=0.0,
                        help="then this many minutes of replies nobody interrupts (self-interruptions)")
    args = parser.parse_args()
    asyncio.run(run(args.trials, args.seed, args.set, args.alone_min))
    return 0


if __name__ == "__main__":
    sys.exit(main())
