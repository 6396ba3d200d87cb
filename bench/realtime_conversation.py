"""The audio loop keeping time through whole conversations on FIFO-paced ALSA PCMs.

    ./dev bench realtime_conversation [--minutes 10] [--loop c|python] [--cpu-quota 50]

The daemon runs on real alsa-lib PCMs: capture from a ``file`` PCM whose input is a FIFO
that another process (SCHED_FIFO where allowed: it stands in for a card's clock) fills at
exactly 1x; playback to a ``file`` PCM. The microphone script is a conversation: the
person asks for a story in the bundled voice, and talks over the device's reply a few
seconds later (an espeak-ng voice asking a question: a barge-in), every ~14 s, for
``--minutes``. The agent is examples/agent_server.py in its own process on loopback,
streaming words at LLM pace (40 ms apart); the recognizer (pocketsphinx by default) and
piper are busy throughout.

Beside the daemon, in the same process and run, a raw pyalsaaudio read+write loop on
its own thread services a second FIFO-paced PCM pair: what a Python-thread audio loop
gets from the same process under the same load.

Reported per loop: per-period capture-read lateness (completion time against the first
read + n x period; histogram, p99, max), would-be xruns (periods late by >= the ALSA
buffer, 4 x 10 ms), the front end's lag behind audio time at each barge-in (the
``barge_in`` event's wall time against when its audio was captured), CPU (process, and
idle over the first 20 s of silence; and the daemon's own: the process less this bench's
raw loop and steal-sampler threads, plus the daemon's recognizer worker process).
``--cpu-quota 50`` first moves this process into a cgroup (v1 ``cpu`` or v2) limited to
50 % of one core, like a slower board; the FIFO writers and the agent server stay outside it.

The FIFO cannot overrun (a late reader only grows its backlog), so lateness is measured
rather than xruns counted; a card with the same buffer overruns at 40 ms late.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.alsa_devices import (
    AlsaDevices,
    start_fifo_writer,
    write_alsa_config,
    write_raw,
    writer_lateness_ms,
)
from support.hearing_audio import espeak_speech

from edgevoice.audio.io.alsa import AlsaBackend
from edgevoice.audio.io.backend import Captured
from edgevoice.audio.io.rtloop import RtAlsaBackend
from edgevoice.device.config import load_config
from edgevoice.device.events import Event, EventType
from edgevoice.device.runtime.daemon import Daemon
from edgevoice.device.runtime.demo import Line, synthesize_lines

ROOT = Path(__file__).resolve().parent.parent
P = 160
PERIOD_S = 0.01
BUFFER_MS = 40.0
IDLE_S = 30.0  # silence before the first question: the idle CPU is measured in it
CYCLE_S = 14.0
STORY = "Please tell me a story."
INTERRUPTIONS = ("Sorry, what time is it?", "Wait, what is the date today?", "Excuse me, how are you?",
                 "Hold on, what is your name?")
BOUNDS_MS = (1, 2, 5, 10, 20, 40, 80, 160, 320)


class StealSampler:
    """The hypervisor's steal time (``/proc/stat``, all CPUs), sampled every 20 ms on a
    thread: on a VM a vCPU that is descheduled cannot run even a SCHED_FIFO thread, so a
    late read inside a burst of steal is the host's, not the loop's."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK")
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StealSampler:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self.thread.join(1.0)

    def _read(self) -> float:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
        return float(fields[8]) * self._tick_ms if len(fields) > 8 else 0.0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), self._read()))
            self._stop.wait(0.02)

    def steal_ms(self, start: float, end: float) -> float:
        """Steal (ms, summed over CPUs) between the samples around ``start`` and ``end``."""
        if len(self.samples) < 2:
            return 0.0
        times = np.asarray([t for t, _ in self.samples])
        values = np.asarray([v for _, v in self.samples])
        lo = max(0, int(np.searchsorted(times, start, side="right")) - 1)
        hi = min(len(times) - 1, int(np.searchsorted(times, end, side="left")))
        return float(values[hi] - values[lo])


def late_reads_in_steal(own_ms: np.ndarray, first_s: float, sampler: StealSampler,
                        above_ms: float = 20.0, steal_at_least_ms: float = 10.0) -> tuple[int, int]:
    """How many reads were late (their own lateness) by more than ``above_ms``, and how
    many of those had at least ``steal_at_least_ms`` of steal while they were late."""
    late = np.flatnonzero(own_ms > above_ms)
    stolen = 0
    for k in late:
        due = first_s + (int(k) + 1) * PERIOD_S
        if sampler.steal_ms(due - 0.02, due + float(own_ms[k]) / 1000.0 + 0.02) >= steal_at_least_ms:
            stolen += 1
    return len(late), stolen


class TimedAlsaBackend(AlsaBackend):
    """The pyalsaaudio backend, noting when each capture period reached Python."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.done: list[float] = []

    def read_raw(self) -> Captured | bytes:
        captured = super().read_raw()
        self.done.append(time.monotonic())
        return captured


def match_barge_ins(onsets_s: list[float], talk_overs_s: list[float], requests_s: list[float], *,
                    early_s: float = 0.5, late_s: float = 2.0) -> tuple[int, int, list[float]]:
    """Which of the person's lines the barge-ins were on: (talk-overs taken, the person's
    questions barged in on, the onsets of barge-ins on nothing the person said).

    A barge-in's onset (audio time) is on a line when it lies from ``early_s`` before the
    line's start (the VAD's pre-roll) to ``late_s`` after it. A line is counted once, however
    many barge-ins it made ("Hold on, | what is your name?" can end a turn at its comma and
    barge in again). A question is barged in on when the talk-over before it was missed and
    the reply still played when the person asked again. A barge-in on nothing is the device
    taking its own voice, or the room's noise, for a person: a self-interruption."""
    on_nothing: list[float] = []
    taken: set[float] = set()
    for onset in onsets_s:
        lines = [at for at in (*talk_overs_s, *requests_s) if at - early_s <= onset <= at + late_s]
        if lines:
            taken.add(lines[0])
        else:
            on_nothing.append(onset)
    return len(taken & set(talk_overs_s)), len(taken & set(requests_s)), sorted(on_nothing)


def _lateness_ms(done: list[float]) -> np.ndarray:
    """Per-period lateness against first + n x period, re-anchored when early (as the C loop)."""
    late = np.zeros(len(done))
    anchor = done[0] if done else 0.0
    for index, at in enumerate(done):
        value = at - (anchor + index * PERIOD_S)
        if value < 0:
            anchor += value
            value = 0.0
        late[index] = value * 1000.0
    return late


def _histogram(late_ms: np.ndarray) -> str:
    edges = (0, *BOUNDS_MS, float("inf"))
    counts = np.histogram(late_ms, bins=edges)[0]
    return " ".join(f"<{b}:{c}" for b, c in zip((*BOUNDS_MS, "inf"), counts, strict=True) if c)


def _raw_loop(capture: str, playback: str, stop: threading.Event, done: list[float],
              cpu: list[float]) -> None:
    import alsaaudio

    cap = alsaaudio.PCM(alsaaudio.PCM_CAPTURE, device=capture, channels=1, rate=16000,
                        format=alsaaudio.PCM_FORMAT_S16_LE, periodsize=P, periods=4)
    play = alsaaudio.PCM(alsaaudio.PCM_PLAYBACK, device=playback, channels=1, rate=16000,
                         format=alsaaudio.PCM_FORMAT_S16_LE, periodsize=P, periods=4)
    silence = bytes(P * 2)
    start = time.thread_time()
    while not stop.is_set():
        cap.read()
        done.append(time.monotonic())
        play.write(silence)
    cpu.append(time.thread_time() - start)
    cap.close()
    play.close()


def _script(minutes: float, voice: str) -> tuple[np.ndarray, list[float], list[float]]:
    """The microphone: silence, then a story request and a barge-in every CYCLE_S."""
    story = synthesize_lines(voice, None, (Line(STORY),), still=False)[STORY]
    rng = np.random.default_rng(7)
    total = int((IDLE_S + minutes * 60.0 + 5.0) * 16000)
    mic = (rng.standard_normal(total) * 10).astype(np.int16)  # a quiet room, ~-70 dBFS
    at = IDLE_S
    barge_ins: list[float] = []
    requests: list[float] = []
    index = 0
    while at + CYCLE_S < IDLE_S + minutes * 60.0:
        start = int(at * 16000)
        mic[start : start + len(story)] += story
        requests.append(at)
        # the reply starts ~1.5 s after the question; the person talks over it 3.5 s in
        onset = at + len(story) / 16000 + 5.0
        question = espeak_speech(INTERRUPTIONS[index % len(INTERRUPTIONS)],
                                 ("en-us", "en-gb")[index % 2], 160)
        q = int(onset * 16000)
        mic[q : q + len(question)] += (question * 0.5).astype(np.int16)
        barge_ins.append(onset)
        at += CYCLE_S
        index += 1
    return mic, barge_ins, requests


@contextlib.contextmanager
def _cpu_quota(percent: float) -> Iterator[str]:
    """This process in a cgroup limited to ``percent`` of one core (v1 cpu or v2)."""
    name = f"edgevoice-bench-{os.getpid()}"
    v1 = Path("/sys/fs/cgroup/cpu")
    v2 = Path("/sys/fs/cgroup")
    parent = Path("/proc/self/cgroup").read_text()
    if (v1 / "cpu.cfs_quota_us").exists():
        group = v1 / name
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text(str(int(percent * 1000)))
        # A board of its own: the quota caps it, and the largest weight keeps the other
        # tenants of a shared machine from taking it below the quota.
        (group / "cpu.shares").write_text("262144")
        note = "cgroup v1 cpu, shares 262144"
        with contextlib.suppress(OSError):  # real-time runtime for the loop thread, if allowed
            (group / "cpu.rt_runtime_us").write_text("50000")
            note += ", rt_runtime 50 ms/s"
        procs = group / "cgroup.procs"
    elif (v2 / "cgroup.controllers").exists() and "cpu" in (v2 / "cgroup.controllers").read_text():
        group = v2 / name
        group.mkdir()
        (group / "cpu.max").write_text(f"{int(percent * 1000)} 100000")
        note = "cgroup v2"
        procs = group / "cgroup.procs"
    else:
        raise SystemExit("no cgroup cpu controller here: use a competing busy process instead")
    back = Path(parent.strip().splitlines()[0].split(":", 2)[2])
    procs.write_text(str(os.getpid()))
    try:
        yield f"{note}, quota {percent:g} % of one core"
    finally:
        home = (v1 if group.parent == v1 else v2) / back.relative_to("/")
        with contextlib.suppress(OSError):
            for pid in procs.read_text().split():
                (home / "cgroup.procs").write_text(pid)
        with contextlib.suppress(OSError):
            group.rmdir()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _conversation(args: argparse.Namespace, folder: Path, devices: AlsaDevices) -> dict[str, Any]:
    loaded = load_config(None, ["audio.backend=alsa", "gpio.enabled=false", "mqtt.url=", "device.id=bench",
                                f"device.state_dir={folder / 'state'}", "conversation.session_idle_reset_s=0",
                                "earcons.wake=false", "llm.provider=agent",
                                f"agent.url=http://127.0.0.1:{args.port}/agent", *args.set],
                         search_paths=[])
    config = loaded.config
    mic, barge_ins, requests = _script(args.minutes, config.tts.voice)
    source = write_raw(folder / "mic.raw", mic)
    fifo, raw_fifo = folder / "mic.fifo", folder / "raw.fifo"
    # the raw loop starts before the daemon has loaded its engines: its input runs longer
    raw_source = write_raw(folder / "raw.raw", np.concatenate([mic, np.zeros(300 * 16000, np.int16)]))
    timing = folder / "writer.timing"
    writer = start_fifo_writer(fifo, source, P * 2, PERIOD_S, rt_priority=args.writer_priority, timing=timing)
    raw_writer = start_fifo_writer(raw_fifo, raw_source, P * 2, PERIOD_S, rt_priority=args.writer_priority)
    quota = _cpu_quota(args.cpu_quota) if args.cpu_quota else contextlib.nullcontext("no quota")
    with quota as pressure:
        options: dict[str, Any] = dict(capture_device=devices.mic(fifo, 1),
                                       playback_device=devices.speaker(folder / "spk.raw"),
                                       buffer_periods=config.audio.buffer_periods)
        backend: AlsaBackend
        lateness: list[int] = []
        if args.loop == "c":
            backend = RtAlsaBackend(P, rt_priority=config.audio.rt_priority, **options)
            backend.lateness_ns = lateness
        else:
            backend = TimedAlsaBackend(P, **options)
        events: list[tuple[float, Event]] = []
        daemon = Daemon(loaded, backend=backend, on_event=lambda e: events.append((time.monotonic(), e)),
                        root=folder / "state")
        stop_raw = threading.Event()
        raw_done: list[float] = []
        raw_cpu: list[float] = []
        raw = threading.Thread(target=_raw_loop, args=(devices.mic(raw_fifo, 1),
                                                       devices.speaker(folder / "rawspk.raw"),
                                                       stop_raw, raw_done, raw_cpu), daemon=True)
        raw.start()
        steal = StealSampler().__enter__()
        runner = asyncio.create_task(daemon.run())
        ready = asyncio.create_task(daemon.ready.wait())
        await asyncio.wait({runner, ready}, return_when=asyncio.FIRST_COMPLETED)
        if runner.done():
            await runner
        started = time.monotonic()  # the capture FIFO's writer starts with the device
        raw_from = len(raw_done)  # the raw loop is compared over the same span
        await asyncio.sleep(10.0)  # models loaded, the room quiet
        instruments = (raw, steal.thread)
        idle_cpu0, idle_own0, idle_wall0 = _cpu_s(), _daemon_cpu_s(instruments), time.monotonic()
        await asyncio.sleep(IDLE_S - 12.0)
        idle_wall = time.monotonic() - idle_wall0
        idle_cpu = (_cpu_s() - idle_cpu0) / idle_wall
        idle_own = (_daemon_cpu_s(instruments) - idle_own0) / idle_wall
        cpu0, own0 = _cpu_s(), _daemon_cpu_s(instruments)
        wall0 = time.monotonic()
        await asyncio.sleep(IDLE_S - (time.monotonic() - started) + args.minutes * 60.0)
        cpu = (_cpu_s() - cpu0) / (time.monotonic() - wall0)
        own = (_daemon_cpu_s(instruments) - own0) / (time.monotonic() - wall0)
        front_dropped = daemon.duplex.stats.dropped if daemon.duplex is not None else 0
        daemon.stop()
        await asyncio.wait({runner}, timeout=30)
        stop_raw.set()
        raw.join(5.0)
        steal.__exit__()
        writer_late = writer_lateness_ms(writer, timing)
        raw_writer.kill()
        loop_stats = backend.loop_stats() if isinstance(backend, RtAlsaBackend) else {}
    first = (backend.first_done_ns / 1e9 if isinstance(backend, RtAlsaBackend)
             else backend.done[0] if isinstance(backend, TimedAlsaBackend) and backend.done else started)
    late_ms = (np.asarray(lateness) / 1e6 if args.loop == "c"
               else _lateness_ms(backend.done if isinstance(backend, TimedAlsaBackend) else []))
    # the frame the detector decided on was captured (complete) at first + its end - 1 period
    lags = [(at - (first + float(e.data["frame_s"]) - PERIOD_S)) * 1000.0
            for at, e in events if e.type == EventType.BARGE_IN]
    taken, on_requests, on_nothing = match_barge_ins(
        [float(e.data["onset_s"]) for _, e in events if e.type == EventType.BARGE_IN], barge_ins, requests)
    turns = sum(1 for _, e in events if e.type == EventType.TRANSCRIPT_USER)
    if args.events is not None:
        with args.events.open("w", encoding="utf-8") as out:
            out.write(json.dumps({"talk_overs_s": barge_ins, "requests_s": requests}) + "\n")
            for at, e in events:
                out.write(json.dumps({"wall_s": round(at - first, 3), **e.as_dict()}, default=str) + "\n")
    xruns = [e.data for _, e in events if e.type == "audio.xrun"]
    return {"pressure": pressure, "late_ms": late_ms, "raw_late_ms": _lateness_ms(raw_done[raw_from:]),
            "lags_ms": lags, "scheduled": len(barge_ins), "taken": taken,
            "on_requests": on_requests, "on_nothing": on_nothing,
            "turns": turns, "cpu": cpu, "idle_cpu": idle_cpu,
            "daemon_cpu": own, "daemon_idle_cpu": idle_own,
            "raw_cpu_s": raw_cpu[0] if raw_cpu else float("nan"), "loop_stats": loop_stats,
            "xrun_events": xruns, "load": os.getloadavg(), "front_dropped": front_dropped,
            "writer_late_ms": writer_late, "steal": steal, "first_s": first,
            "steal_share": _steal_share(steal, wall0)}


def _steal_share(steal: StealSampler, since: float) -> float:
    """Steal over the conversation, as a share of all CPUs' time."""
    if not steal.samples:
        return float("nan")
    end = steal.samples[-1][0]
    return steal.steal_ms(since, end) / ((end - since) * 1000.0 * (os.cpu_count() or 1))


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _thread_cpu_s(thread: threading.Thread) -> float:
    """CPU time of a running thread of this process (0 once it has ended)."""
    if thread.ident is None or not thread.is_alive():
        return 0.0
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except OSError:
        return 0.0


def _worker_cpu_s() -> float:
    """CPU time of the daemon's live worker processes (the recognizer's, started through
    multiprocessing), which RUSAGE_SELF leaves out; the FIFO writers and the agent server
    are children of this process too, and are not counted."""
    total_ticks = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    if b"multiprocessing" not in Path(f"/proc/{child}/cmdline").read_bytes():
                        continue
                    fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                    total_ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return total_ticks / os.sysconf("SC_CLK_TCK")


def _daemon_cpu_s(instruments: tuple[threading.Thread, ...]) -> float:
    """The daemon's own CPU time: this process less the bench's instruments running in it
    (the raw pyalsaaudio loop, the steal sampler), plus the daemon's worker processes."""
    return _cpu_s() - sum(_thread_cpu_s(thread) for thread in instruments) + _worker_cpu_s()


def own_lateness_ms(read_late: np.ndarray, writer_late: np.ndarray) -> tuple[np.ndarray, int]:
    """Each read's lateness less its clock stand-in's: a read cannot finish before the FIFO
    writer (which a card's DMA does not need) was ready to write that period's chunk. Read
    k takes chunk k; a constant offset from reads before the daemon's own (none are
    expected) is found as the one within 3 chunks that explains the most lateness."""
    n = min(len(read_late), len(writer_late))
    if n == 0:
        return read_late, 0
    best = min(range(-3, 4), key=lambda d: float(np.sum(np.maximum(
        0.0, read_late[max(0, -d):n - max(0, d)] - writer_late[max(0, d):n - max(0, -d)]))))
    own = read_late.copy()
    lo, hi = max(0, -best), n - max(0, best)
    own[lo:hi] = np.maximum(0.0, read_late[lo:hi] - writer_late[lo + best:hi + best])
    return own, best


def _row(name: str, late: np.ndarray) -> str:
    if len(late) == 0:
        return f"| {name} | 0 | - | - | - | - |"
    would = int(np.sum(late >= BUFFER_MS))
    return (f"| {name} | {len(late)} | {np.percentile(late, 99):.1f} | {late.max():.1f} | {would} "
            f"| {_histogram(late)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--loop", choices=("c", "python"), default="c",
                        help="the daemon's ALSA loop: the C period loop or the pyalsaaudio one")
    parser.add_argument("--cpu-quota", type=float, default=0.0, help="percent of one core (0: none)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--events", type=Path, default=None, metavar="FILE",
                        help="also write the daemon's events there, one JSON object a line, after "
                             "the person's lines (to trace a missed or a self-made barge-in)")
    parser.add_argument("--nice", type=int, default=-5,
                        help="niceness change for the daemon's process, as the service's Nice=-5 "
                             "(default -5; 0: none)")
    parser.add_argument("--writer-priority", type=int, default=10,
                        help="SCHED_FIFO priority of the FIFO writers standing in for the card's clock "
                             "(default 10, below the loop's 20: above it a writer running Python "
                             "on the loop's CPU stops the loop, which a card's DMA never does)")
    args = parser.parse_args()
    args.port = _free_port()
    server = subprocess.Popen([sys.executable, str(ROOT / "examples" / "agent_server.py"), "--port",
                               str(args.port), "--word-delay-ms", "40"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import tempfile

    if args.nice:
        os.nice(args.nice)  # as the service runs (image/systemd/edgevoice.service: Nice=-5)
    try:
        # in memory: the playback file PCMs write on every period, and a loaded disk would
        # stall those writes (a card's DMA buffer does not)
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
            folder = Path(tmp)
            os.environ["ALSA_CONFIG_PATH"] = write_alsa_config(folder / "alsa")
            time.sleep(1.0)
            result = asyncio.run(_conversation(args, folder, AlsaDevices(folder)))
    finally:
        server.kill()
        server.wait()
    settings = " ".join(args.set) or "default engines"
    settings += f", nice {args.nice:+d}" if args.nice else ""
    settings += f", writers at SCHED_FIFO {args.writer_priority}"
    print(f"\n## {args.minutes:g} min of conversation on FIFO-paced ALSA PCMs, daemon on the "
          f"{'C period loop' if args.loop == 'c' else 'pyalsaaudio loop'} ({settings}; {result['pressure']}; "
          f"{os.cpu_count()} cores, load average at the end {result['load'][0]:.1f})\n")
    print("| capture reads | periods | p99 late ms | max late ms | would-be xruns (>= 40 ms) "
          "| histogram (ms) |")
    print("|---|---:|---:|---:|---:|---|")
    print(_row(f"edgevoice daemon, {args.loop} loop", result["late_ms"]))
    print(_row("raw pyalsaaudio loop (a thread in the same process)", result["raw_late_ms"]))
    writer_late = result["writer_late_ms"]
    if len(writer_late) and args.loop == "c":
        print(_row("the clock stand-in itself (the FIFO writer: late to write its chunk)", writer_late))
        own, offset = own_lateness_ms(result["late_ms"], writer_late)
        print(_row(f"edgevoice daemon, c loop, less the stand-in's lateness (its own; chunk offset "
                   f"{offset:+d})", own))
        late, stolen = late_reads_in_steal(own, result["first_s"], result["steal"])
        print(f"\nreads late by more than 20 ms of their own: {late}; of those, {stolen} were late while "
              f"the hypervisor stole >= 10 ms of CPU time (/proc/stat steal; the vCPU was descheduled, "
              f"which no priority inside the guest can prevent)")
    print(f"hypervisor steal over the conversation: {100 * result['steal_share']:.2f} % of all CPUs' time")
    lags = np.asarray(result["lags_ms"])
    print(f"\nbarge-ins: {len(lags)}; talk-overs taken: {result['taken']} of {result['scheduled']} "
          f"scheduled; barge-ins on the person's next question (the talk-over before it missed, the "
          f"reply still playing): {result['on_requests']}; user turns heard: {result['turns']}")
    on_nothing = result["on_nothing"]
    print(f"barge-ins on nothing the person said (the device interrupting itself; target 0): "
          f"{len(on_nothing)}" + (f", at {', '.join(f'{t:.1f}' for t in on_nothing)} s of audio"
                                  if on_nothing else ""))
    if len(lags):
        print(f"front-end lag behind audio time at a barge-in: median {np.median(lags):.0f} ms, "
              f"p90 {np.percentile(lags, 90):.0f} ms, max {lags.max():.0f} ms (target <= 100)")
    raw_pct = 100.0 * result["raw_cpu_s"] / (IDLE_S + args.minutes * 60.0)
    print(f"CPU (process, % of one core): {100 * result['cpu']:.1f} in conversation, "
          f"{100 * result['idle_cpu']:.1f} idle (18 s of silence before the first question; the raw "
          f"loop beside it costs ~{raw_pct:.1f})")
    print(f"CPU of the daemon alone (the process less the raw loop and the steal sampler, plus its "
          f"recognizer worker; % of one core): {100 * result['daemon_cpu']:.1f} in conversation, "
          f"{100 * result['daemon_idle_cpu']:.1f} idle (target <= 5)")
    print(f"frames the front end fell too far behind to take (the duplex queue dropped them): "
          f"{result['front_dropped']}")
    stats = result["loop_stats"]
    if stats:
        print(f"C loop: {stats['periods']} periods, overruns {stats['overruns']}, underruns "
              f"{stats['underruns']}, playback queue empty {stats['play_empty']} periods, ring dropped "
              f"{stats['ring_dropped']}, worst work {stats['work_max_ms']:.2f} ms, thread CPU "
              f"{stats['thread_cpu_s']:.2f} s, SCHED_FIFO {'yes' if stats['rt_error'] == 0 else 'no'}, "
              f"memory locked {'yes' if stats['mlock_error'] == 0 else 'no'}")
    print(f"audio.xrun events: {len(result['xrun_events'])}")


if __name__ == "__main__":
    main()
