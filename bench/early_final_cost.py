"""What an earlier early final costs: final passes, and speculative agent requests closed
unread, per turn, on the labelled turns of ``bench/turn_completion.py``.

An early final (``[asr] early_final_ms``) runs the recognizer's final pass in every pause
that long, and with speculation (``[llm] speculate``) sends the agent a request on its
words. When the person goes on, both were for nothing: the pass cost CPU, and the request
is closed (an LLM server may already have spent a prompt on it). A lower setting starts
the reply sooner (``bench/heard_latency.py``) and pays this in more pauses.

The clips are the turn-completion benchmark's, split once into a tuning and a validation
set from its seed: finished requests, and sentences broken off mid-phrase ("set a timer
for" … "twenty minutes", 0.6-1.5 s pauses; fillers, function words, a trailing "and"),
said by piper and espeak-ng voices, clean, in fan noise, in babble and over the residue of
the device's own voice. Their only pauses are those the voices put at commas and the
mid-phrase one: a person's hesitations inside a phrase are not modelled, so the cost on
real speech is higher by however many of those pass the setting.

The pipeline is the daemon's with the shipped ``[endpoint]`` (fixed 600 ms, text hold
1600 ms): its Silero VAD (windows computed once per clip), the listener, and the shipped
English recognizer (Moonshine) decoding at each early final; its words are read by the
text hold's rule once the audio clock has passed the decode's CPU time. Each early final
is then a request "without the gate"; "with the gate" the runtime's rule
(``speculation.start_refusal``) sends none for words that read mid-thought while the text
hold is on. A request is closed unread when the person went on; otherwise the turn ended
on it and its reply is the one played.

    ./dev bench early_final_cost [--settings 50,100,200,300] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from turn_completion import FRAME, PI4_FACTOR, ReplayVad, vad_windows
from turn_completion_clips import SEED, Clip, make_clips
from turn_completion_text import BenchAsr, PacedReader, Readings

from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine
from edgevoice.audio.hearing.events import EarlyTranscript, SpeechResumed, SpeechStopped
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.turn_text import mid_thought
from edgevoice.audio.hearing.vad import VadWindow
from edgevoice.device.assembly.hearing import build_asr, build_vad, endpoint_settings
from edgevoice.device.config.schema import AsrConfig, EndpointConfig, VadConfig
from edgevoice.device.runtime.speculation import start_refusal

SHIPPED = AsrConfig().early_final_ms


@dataclass
class Pass:
    """One early final: its words, whether they read mid-thought, its decode's CPU."""

    text: str
    mid_thought: bool
    cpu_ms: float
    resumed: bool = False  # the person went on: its request (if sent) was closed unread

    def requested(self, gated: bool) -> bool:
        return start_refusal(allowed=True, listening=True, accepted=True, remote=False, text=self.text,
                             held=gated and self.mid_thought) is None


@dataclass
class ClipRun:
    clip: Clip
    passes: list[Pass] = field(default_factory=list)
    cut_early: bool = False  # an incomplete turn ended in its mid-phrase pause

    def requests(self, gated: bool) -> int:
        return sum(p.requested(gated) for p in self.passes)

    def closed(self, gated: bool) -> int:
        return sum(p.requested(gated) and p.resumed for p in self.passes)

    def prepared_at_end(self, gated: bool) -> bool:
        """The turn ended on a pass whose request went out: its reply was ready sooner."""
        ended = [p for p in self.passes if not p.resumed]
        return bool(ended) and ended[-1].requested(gated)


def run_clip(clip: Clip, windows: Sequence[VadWindow], readings: Readings, early_final_ms: int) -> ClipRun:
    asr = BenchAsr(readings)
    listener = Listener(ReplayVad(windows), asr, endpoint=endpoint_settings(EndpointConfig()),
                        early_final_ms=early_final_ms)
    listener.text_reader = PacedReader(asr, lambda: listener.now, 1.0)
    run = ClipRun(clip)
    for i in range(0, len(clip.audio), FRAME):
        for event in listener.process(clip.audio[i:i + FRAME]):
            if isinstance(event, EarlyTranscript):
                result = event.result()
                held = mid_thought(result.text, result.end_mark)
                run.passes.append(Pass(result.text, held, asr.last_cpu_ms))
            elif isinstance(event, SpeechResumed) and run.passes:
                run.passes[-1].resumed = True
            elif (isinstance(event, SpeechStopped) and clip.pause_s is not None
                  and event.detected < clip.pause_s[1]):
                run.cut_early = True
    return run


def report(set_name: str, results: dict[int, list[ClipRun]]) -> None:
    first = next(iter(results.values()))
    kinds = [r.clip.kind for r in first]
    print(f"\n## {set_name} set: {len(first)} turns ({kinds.count('complete')} finished requests, "
          f"{kinds.count('particle')} finished on a particle or a stranded word, "
          f"{len(first) - kinds.count('complete') - kinds.count('particle')} broken off mid-phrase); "
          "per 100 turns unless said\n")
    print("| early_final_ms | final passes | decode CPU per turn, ms (Pi 4 x4) | requests sent: no gate / "
          "gate | closed unread: no gate / gate | of them in finished turns (gate) | finished requests "
          "prepared: no gate / gate | ending on a particle: prepared, no gate / gate "
          "| broken-off turns cut early |")
    print("|---|---|---|---|---|---|---|---|---|")
    for ms, runs in results.items():
        n = len(runs)
        passes = sum(len(r.passes) for r in runs)
        cpu = sum(p.cpu_ms for r in runs for p in r.passes) / n
        done = [r for r in runs if r.clip.kind == "complete"]
        particle = [r for r in runs if r.clip.kind == "particle"]
        broken = [r for r in runs if r.clip.label != "complete"]
        sent = [sum(r.requests(g) for r in runs) for g in (False, True)]
        closed = [sum(r.closed(g) for r in runs) for g in (False, True)]
        closed_done = sum(r.closed(True) for r in done + particle)
        prepared = [sum(r.prepared_at_end(g) for r in done) / len(done) for g in (False, True)]
        prepared_particle = [sum(r.prepared_at_end(g) for r in particle) / max(1, len(particle))
                             for g in (False, True)]
        cut = sum(r.cut_early for r in broken) / max(1, len(broken))
        tag = f"**{ms}** (shipped)" if ms == SHIPPED else str(ms)
        print(f"| {tag} | {100 * passes / n:.0f} | {cpu:.0f} ({cpu * PI4_FACTOR:.0f}) | "
              f"{100 * sent[0] / n:.0f} / {100 * sent[1] / n:.0f} | {100 * closed[0] / n:.0f} / "
              f"{100 * closed[1] / n:.0f} | {100 * closed_done / n:.0f} | {100 * prepared[0]:.1f} % / "
              f"{100 * prepared[1]:.1f} % | {100 * prepared_particle[0]:.1f} % / "
              f"{100 * prepared_particle[1]:.1f} % | {100 * cut:.1f} % |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", default="50,100,200,300", help="early_final_ms values")
    parser.add_argument("--quick", action="store_true", help="a few clips (smoke run)")
    args = parser.parse_args()
    settings = [int(v) for v in args.settings.split(",")]
    started = time.monotonic()
    vad = build_vad(VadConfig())
    engine = build_asr(AsrConfig(), "en")  # the shipped English recognizer (engine = auto)
    if not isinstance(engine, MoonshineEngine):
        raise SystemExit(f"expected Moonshine as the shipped English engine: {engine.info}")
    readings = Readings(engine)
    try:
        for set_name in ("tuning", "validation"):
            clips = make_clips(set_name, args.quick)
            windows = {c.key: vad_windows(vad, c.audio) for c in clips}
            results = {ms: [run_clip(c, windows[c.key], readings, ms) for c in clips] for ms in settings}
            print(f"[{time.monotonic() - started:.0f} s] {set_name}: {len(clips)} clips, "
                  f"{len(readings.fresh_cpu_ms)} decodes so far", file=sys.stderr, flush=True)
            report(set_name, results)
    finally:
        engine.close()
    cpu = readings.fresh_cpu_ms
    print(f"\nseed {SEED}; {len(cpu)} decodes, CPU median {statistics.median(cpu):.0f} ms, p90 "
          f"{statistics.quantiles(cpu, n=10)[-1]:.0f} ms; the text hold reads the words after that CPU time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
