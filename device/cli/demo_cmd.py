"""``edgevoice demo``: the whole daemon on the simulated room, on embedded defaults."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from edgevoice.device.cli.common import EXIT_FAILURE, EXIT_OK, add_common_options, print_json
from edgevoice.device.config import load_config
from edgevoice.device.config.loader import secret_values
from edgevoice.device.events import Event, EventType
from edgevoice.device.system.logs import scrub_secrets

# The demo's own defaults: the simulated room in real time, no GPIO, no MQTT, the
# built-in agent. --config and --set still win over them.
DEMO_DEFAULTS = (
    "audio.backend=simulated",
    "room.speed=1.0",
    "gpio.enabled=false",
    "mqtt.url=",
    "conversation.session_idle_reset_s=0",
)
SHOWN_EVENTS = {
    EventType.SESSION_READY, EventType.SPEECH_STARTED, EventType.SPEECH_STOPPED,
    EventType.TRANSCRIPT_USER, EventType.REPLY_STARTED, EventType.TRANSCRIPT_AGENT,
    EventType.REPLY_DONE, EventType.BARGE_IN, EventType.ERROR, EventType.TURN_DISCARDED,
    EventType.WAKE_WORD,
}


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "demo", help="a scripted conversation with the whole daemon in a simulated room "
                     "(no hardware, no server)")
    add_common_options(parser, json_output=True)
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="where the mic, speaker and reference WAVs go (default: ./out/demo-TIME)")
    parser.add_argument("--knowledge", type=Path, default=None, metavar="PATH",
                        help="answer from this knowledge folder (e.g. examples/knowledge/museum): the "
                             "person asks museum questions and the built-in agent answers offline")
    parser.add_argument("--fast", action="store_true",
                        help="run the room's clock as fast as the machine allows instead of real time")
    parser.set_defaults(func=_demo)


def _describe(event: Event) -> str:
    data = event.data
    if event.type == EventType.TRANSCRIPT_USER:
        return f"person: {data.get('text')!r}"
    if event.type == EventType.TRANSCRIPT_AGENT:
        return f"device: {data.get('text')!r}"
    if event.type == EventType.REPLY_DONE:
        heard = f" heard {data['heard_text']!r}" if data.get("heard_text") else ""
        return f"reply {data.get('status')}{heard}"
    if event.type == EventType.SESSION_READY:
        return f"ready: agent {data.get('provider')}, audio {data.get('audio')}"
    if event.type == EventType.ERROR:
        return f"error {data.get('code')}: {data.get('message')}"
    return ""


def _latency_table(turns: list[dict[str, Any]]) -> str:
    stages = ["endpoint", "asr_final", "request", "first_text", "first_sentence", "tts_first_audio",
              "playout", "voice_to_voice", "interrupt_to_silence"]
    widths = [len(stage) + 2 for stage in stages]
    header = f"{'turn':<6}{'status':<13}" + "".join(f"{s:>{w}}" for s, w in zip(stages, widths, strict=True))
    rows = [header, "-" * len(header)]
    for number, turn in enumerate(turns, 1):
        values = turn.get("stages_ms", {})
        cells = "".join(f"{values[s]:>{w}.0f}" if s in values else f"{'-':>{w}}"
                        for s, w in zip(stages, widths, strict=True))
        rows.append(f"{number:<6}{turn.get('status', ''):<13}{cells}")
    return "\n".join(rows)


def _demo(args: argparse.Namespace) -> int:
    from edgevoice.device.runtime.demo import MUSEUM_SCRIPT, SCRIPT, run_demo, script_hearing

    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        # The timeline is the demo's output; INFO lines would interleave with it.
        logging.getLogger().setLevel(logging.WARNING)

    out = args.out or Path("out") / time.strftime("demo-%Y%m%d-%H%M%S")
    script = SCRIPT
    knowledge: list[str] = []
    if args.knowledge is not None:
        if not args.knowledge.exists():
            print(f"edgevoice: {args.knowledge} does not exist; give a knowledge folder", file=sys.stderr)
            return EXIT_FAILURE
        script = MUSEUM_SCRIPT
        paths = json.dumps([str(args.knowledge.resolve())])
        index = json.dumps(str((out / "knowledge.sqlite3").resolve()))
        knowledge = ["llm.provider=local", "knowledge.enabled=true", f"knowledge.paths={paths}",
                     f"knowledge.index={index}"]
    # The recognizer listens for the script's lines (script_hearing): the conversation plays
    # out the same on every run; --set asr.engine=... or asr.grammar=[] wins.
    hearing = script_hearing(script)
    overrides = (list(DEMO_DEFAULTS) + knowledge + hearing + (["room.speed=0"] if args.fast else [])
                 + list(args.overrides))
    loaded = load_config(args.config, overrides, search_paths=[])
    scrub_secrets(secret_values(loaded.config))

    def show(event: Event, audio_s: float) -> None:
        if args.json or event.type not in SHOWN_EVENTS:
            return
        sys.stdout.write(f"{audio_s:7.2f}s  {event.type:<22} {_describe(event)}\n")
        sys.stdout.flush()

    report = asyncio.run(run_demo(loaded, out, script, on_event=show))
    if args.json:
        print_json({"ok": report.ok, "problems": report.problems, "events": report.events,
                    "turns": report.turns, "lines": report.lines_said, "recordings": report.recordings})
    else:
        print()
        print(_latency_table(report.turns))
        print("\nstage times in ms on the audio clock; voice_to_voice includes the endpointer's "
              "end-of-speech silence")
        for name, path in report.recordings.items():
            print(f"recorded {name}: {path}")
        print("\ndemo " + ("passed" if report.ok else "FAILED: " + "; ".join(report.problems)))
    return EXIT_OK if report.ok else EXIT_FAILURE
