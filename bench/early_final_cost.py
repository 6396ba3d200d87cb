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
mid-phrase one. A person also hesitates inside a phrase while choosing the next word, so
a third family is scored on its own: the set's finished requests, each with one or two
hesitations of 120-450 ms after a random word (cut from the whole sentence, so the
words keep their prosody). Those turns should end once, at their end; every early final
inside them is a pass, and with speculation a request, spent for nothing.

The pipeline is the daemon's with the shipped ``[endpoint]`` (fixed 600 ms, text hold
1600 ms): its Silero VAD (windows computed once per clip), the listener, and the shipped
English recognizer (Moonshine) decoding at each early final; its words are read by the
text hold's rule once the audio clock has passed the decode's CPU time. Each early final
is then a request "without the gate"; "with the gate" the runtime's rule
(``speculation.start_refusal``) sends none for words that read mid-thought while the text
hold is on. A request is closed unread when the person went on; otherwise the turn ended
on it and its reply is the one played.

A last table sends the gated requests in time instead (``[llm] speculate_margin_ms``, the
runtime's own rule, ``speculation.send_delay_s``): each waits in its pause until its first
audio is due the margin before the pause could end the turn, for an agent whose lead (a
reply's start to its first audio, as the device estimates it) is given by ``--leads``. A
request whose pause ended sooner was never sent.

With ``--early-decode-ms`` (``[asr] early_decode_ms``) the decode starts sooner in the pause
than its words are told: "final passes" counts every decode, those in pauses the person
ended before ``early_final_ms`` too (CPU spent, no request).

    ./dev bench early_final_cost [--settings 50,100,200,300] [--early-decode-ms 0,64]
                                 [--leads 400,600] [--end-silence-ms 600] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from turn_completion import FRAME, PI4_FACTOR, ReplayVad, vad_windows
from turn_completion_clips import HESITATION_S, SEED, Clip, make_clips, make_hesitant_clips
from turn_completion_text import BenchAsr, PacedReader, Readings

from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine
from edgevoice.audio.hearing.events import EarlyTranscript, SpeechResumed, SpeechStopped
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.text_reader import reading_of
from edgevoice.audio.hearing.vad import VadWindow
from edgevoice.device.assembly.hearing import build_asr, build_vad, endpoint_settings
from edgevoice.device.config.schema import AsrConfig, EndpointConfig, VadConfig
from edgevoice.device.runtime.speculation import send_delay_s, start_refusal
from edgevoice.device.runtime.turns import ConversationSettings

SHIPPED = AsrConfig().early_final_ms
SHIPPED_DECODE = AsrConfig().early_decode_ms
MARGIN_S = ConversationSettings().speculate_margin_ms / 1000.0  # the shipped [llm] speculate_margin_ms


class Setting(NamedTuple):
    """A row: ``[asr] early_final_ms``, and ``early_decode_ms`` (0: the decode starts then too)."""

    final_ms: int
    decode_ms: int

    @property
    def tag(self) -> str:
        ahead = f", decode at {self.decode_ms}" if 0 < self.decode_ms < self.final_ms else ""
        shipped = self.final_ms == SHIPPED and self.decode_ms == SHIPPED_DECODE
        return f"**{self.final_ms}{ahead}** (shipped)" if shipped else f"{self.final_ms}{ahead}"


@dataclass
class Pass:
    """One early final told (its words handed over): its words, whether they read
    mid-thought, when it was told, when its pause could end the turn at the soonest, and
    when speech came back."""

    text: str
    mid_thought: bool
    at_s: float
    earliest_end_s: float | None
    resumed_s: float | None = None  # the person went on: its request (if sent) was closed unread

    @property
    def resumed(self) -> bool:
        return self.resumed_s is not None

    def sent(self, gated: bool, lead_s: float | None = None) -> bool:
        """Its request went out: at once (``lead_s`` None), or in time for an agent that takes
        ``lead_s`` to its first audio (the runtime's rule, the shipped margin), unless the
        speech came back first."""
        if start_refusal(allowed=True, listening=True, accepted=True, remote=False, text=self.text,
                         held=gated and self.mid_thought) is not None:
            return False
        if lead_s is None or self.resumed_s is None:
            return True
        wait = send_delay_s(now_s=self.at_s, earliest_end_s=self.earliest_end_s, lead_s=lead_s,
                            margin_s=MARGIN_S)
        return self.at_s + wait < self.resumed_s


@dataclass
class ClipRun:
    clip: Clip
    passes: list[Pass] = field(default_factory=list)  # early finals told (EarlyTranscript)
    decodes: int = 0  # final passes run: those told, and those begun in a pause ended sooner
    decode_cpu_ms: float = 0.0
    cut_early: bool = False  # an incomplete turn ended in its mid-phrase pause
    ended_inside: bool = False  # a finished request ended before its last words (a hesitation)

    def requests(self, gated: bool, lead_s: float | None = None) -> int:
        return sum(p.sent(gated, lead_s) for p in self.passes)

    def closed(self, gated: bool, lead_s: float | None = None) -> int:
        return sum(p.sent(gated, lead_s) and p.resumed for p in self.passes)

    def prepared_at_end(self, gated: bool, lead_s: float | None = None) -> bool:
        """The turn ended on a pass whose request went out: its reply was ready sooner."""
        ended = [p for p in self.passes if not p.resumed]
        return bool(ended) and ended[-1].sent(gated, lead_s)


def run_clip(clip: Clip, windows: Sequence[VadWindow], readings: Readings, setting: Setting,
             endpoint: EndpointConfig) -> ClipRun:
    asr = BenchAsr(readings)
    listener = Listener(ReplayVad(windows), asr, endpoint=endpoint_settings(endpoint),
                        early_final_ms=setting.final_ms, early_decode_ms=setting.decode_ms)
    listener.text_reader = PacedReader(asr, lambda: listener.now, 1.0)
    run = ClipRun(clip)
    for i in range(0, len(clip.audio), FRAME):
        for event in listener.process(clip.audio[i:i + FRAME]):
            if isinstance(event, EarlyTranscript):
                result = event.result()
                held = reading_of(result).mid_thought
                run.passes.append(Pass(result.text, held, event.t, event.earliest_end_s))
            elif isinstance(event, SpeechResumed) and run.passes:
                run.passes[-1].resumed_s = event.t
            elif isinstance(event, SpeechStopped):
                run.cut_early |= clip.pause_s is not None and event.detected < clip.pause_s[1]
                run.ended_inside |= clip.label == "complete" and event.detected < clip.speech_end_s
    run.decodes, run.decode_cpu_ms = asr.decodes, asr.decode_cpu_ms
    return run


def row_counts(setting: Setting, runs: list[ClipRun]) -> tuple[str, int, int, list[int], list[int]]:
    """A setting's row: its tag, turns, final passes, and requests sent and closed unread
    (without, with the gate)."""
    tag = setting.tag
    sent = [sum(r.requests(g) for r in runs) for g in (False, True)]
    closed = [sum(r.closed(g) for r in runs) for g in (False, True)]
    return tag, len(runs), sum(r.decodes for r in runs), sent, closed


def report(set_name: str, results: dict[Setting, list[ClipRun]]) -> None:
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
    for setting, runs in results.items():
        tag, n, passes, sent, closed = row_counts(setting, runs)
        cpu = sum(r.decode_cpu_ms for r in runs) / n
        done = [r for r in runs if r.clip.kind == "complete"]
        particle = [r for r in runs if r.clip.kind == "particle"]
        broken = [r for r in runs if r.clip.label != "complete"]
        closed_done = sum(r.closed(True) for r in done + particle)
        prepared = [sum(r.prepared_at_end(g) for r in done) / len(done) for g in (False, True)]
        prepared_particle = [sum(r.prepared_at_end(g) for r in particle) / max(1, len(particle))
                             for g in (False, True)]
        cut = sum(r.cut_early for r in broken) / max(1, len(broken))
        print(f"| {tag} | {100 * passes / n:.0f} | {cpu:.0f} ({cpu * PI4_FACTOR:.0f}) | "
              f"{100 * sent[0] / n:.0f} / {100 * sent[1] / n:.0f} | {100 * closed[0] / n:.0f} / "
              f"{100 * closed[1] / n:.0f} | {100 * closed_done / n:.0f} | {100 * prepared[0]:.1f} % / "
              f"{100 * prepared[1]:.1f} % | {100 * prepared_particle[0]:.1f} % / "
              f"{100 * prepared_particle[1]:.1f} % | {100 * cut:.1f} % |")


def report_hesitant(set_name: str, results: dict[Setting, list[ClipRun]]) -> None:
    first = next(iter(results.values()))
    pauses = sum(len(r.clip.hesitations_s) for r in first)
    low, high = (round(1000 * v) for v in HESITATION_S)
    print(f"\n### {set_name} set, finished requests said with hesitations: {len(first)} turns, "
          f"{pauses} hesitations of {low}-{high} ms; per 100 turns unless said\n")
    print("| early_final_ms | final passes | passes inside a hesitation | requests sent: no gate / gate "
          "| closed unread: no gate / gate | prepared at the end: no gate / gate "
          "| ended inside a hesitation |")
    print("|---|---|---|---|---|---|---|")
    for setting, runs in results.items():
        tag, n, passes, sent, closed = row_counts(setting, runs)
        # the decodes in a pause the person ended (told and taken back, or never told)
        inside = sum(r.decodes - sum(not p.resumed for p in r.passes) for r in runs)
        prepared = [sum(r.prepared_at_end(g) for r in runs) / n for g in (False, True)]
        ended = sum(r.ended_inside for r in runs) / n
        print(f"| {tag} | {100 * passes / n:.0f} | {100 * inside / n:.0f} | {100 * sent[0] / n:.0f} / "
              f"{100 * sent[1] / n:.0f} | {100 * closed[0] / n:.0f} / {100 * closed[1] / n:.0f} | "
              f"{100 * prepared[0]:.1f} % / {100 * prepared[1]:.1f} % | {100 * ended:.1f} % |")


def report_in_time(set_name: str, results: dict[str, dict[Setting, list[ClipRun]]],
                   leads_ms: list[int]) -> None:
    """Requests sent in time (``[llm] speculate_margin_ms``), against at once, with the gate."""
    print(f"\n### {set_name} set, requests sent in time, with the gate: the request waits in the pause "
          f"until its first audio is due {1000 * MARGIN_S:.0f} ms before the pause can end the turn, for "
          "an agent of that lead (a reply's start to its first audio); per 100 turns\n")
    print("| turns | early_final_ms | agent's lead | requests sent | closed unread | prepared at the end |")
    print("|---|---|---|---|---|---|")
    for family, by_setting in results.items():
        for setting, runs in by_setting.items():
            n = len(runs)
            finished = [r for r in runs if r.clip.label == "complete"]
            for lead_ms in (None, *leads_ms):
                lead = None if lead_ms is None else lead_ms / 1000.0
                sent = sum(r.requests(True, lead) for r in runs)
                closed = sum(r.closed(True, lead) for r in runs)
                prepared = sum(r.prepared_at_end(True, lead) for r in finished) / max(1, len(finished))
                tag = setting.tag
                shown = "at once" if lead_ms is None else f"{lead_ms} ms"
                print(f"| {family} | {tag} | {shown} | {100 * sent / n:.0f} | {100 * closed / n:.0f} | "
                      f"{100 * prepared:.1f} % |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", default="50,100,200,300", help="early_final_ms values")
    parser.add_argument("--early-decode-ms", default=str(SHIPPED_DECODE),
                        help="early_decode_ms values, each run with every early_final_ms")
    parser.add_argument("--leads", default="400,600",
                        help="the agent's lead as the device estimates it, in ms (the longest of its last "
                             "replies from their start to their first audio), for the requests sent in "
                             "time; an LLM at 20 and 50 ms a word with piper here gave 400 and 600")
    parser.add_argument("--end-silence-ms", type=int, default=EndpointConfig().end_silence_ms,
                        help="[endpoint] end_silence_ms (default: the shipped value)")
    parser.add_argument("--quick", action="store_true", help="a few clips (smoke run)")
    args = parser.parse_args()
    settings = [Setting(int(f), int(d)) for f in args.settings.split(",")
                for d in args.early_decode_ms.split(",")]
    leads = [int(v) for v in args.leads.split(",")]
    endpoint = EndpointConfig(end_silence_ms=args.end_silence_ms)
    print(f"[endpoint] end_silence_ms = {endpoint.end_silence_ms}, "
          f"hold_silence_ms = {endpoint.hold_silence_ms}")
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
            results = {s: [run_clip(c, windows[c.key], readings, s, endpoint) for c in clips]
                       for s in settings}
            print(f"[{time.monotonic() - started:.0f} s] {set_name}: {len(clips)} clips, "
                  f"{len(readings.fresh_cpu_ms)} decodes so far", file=sys.stderr, flush=True)
            report(set_name, results)
            hesitant = make_hesitant_clips(set_name, args.quick)
            windows = {c.key: vad_windows(vad, c.audio) for c in hesitant}
            with_hesitations = {s: [run_clip(c, windows[c.key], readings, s, endpoint) for c in hesitant]
                                for s in settings}
            report_hesitant(set_name, with_hesitations)
            report_in_time(set_name, {"the clips above": results, "with hesitations": with_hesitations},
                           leads)
    finally:
        engine.close()
    cpu = readings.fresh_cpu_ms
    print(f"\nseed {SEED}; {len(cpu)} decodes, CPU median {statistics.median(cpu):.0f} ms, p90 "
          f"{statistics.quantiles(cpu, n=10)[-1]:.0f} ms; the text hold reads the words after that CPU time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
