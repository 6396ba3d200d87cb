"""Wake-word arbitration between whole daemons: two and three devices, one mosquitto.

    .venv/bin/python bench/arbitration_daemons.py              # 2 and 3 devices, 0 and 50 ms: ~27 min
    .venv/bin/python bench/arbitration_daemons.py --wakes 200  # issue 23's size: ~54 min
    .venv/bin/python bench/arbitration_daemons.py --wakes 5 --devices 2 --latency 0

bench/arbitration.py replays detections on bare MqttBridges; this runs the daemons. Each
device is a whole edgevoice Daemon in its own process (tests/support/room_daemon.py: its
own GIL and event loop, as each device of a real room is its own machine) with its own
SimulatedRoom running at 1x real time — arbitration is wall clock over the broker, so the
rooms must be too. All are in one ``[device] room``, listen for okay_nabu, with
``[arbitration] window_ms = 250``, ``listen.follow_up_s = 0`` and
``listen.wake_timeout_s = 0.5`` (the turn the winner opens ends half a second later, so a
wake costs a few seconds), each logged in as its own device (dev1..dev3) to a real
mosquitto with the shipped ACL, directly or through a loopback proxy that delays every
packet by 50 ms each way.

For each wake the same talker (the bundled voice) says "okay nabu" in every room at a
level and an acoustic delay of that room's own (-18..-6 dB, 0..30 ms, drawn per wake from
a seeded RNG; -60 dBFS of noise): the parent gives each room the same wall-clock start
plus its delay (CLOCK_MONOTONIC is one clock for all processes; a room starts the talker
at its next 10 ms period). Everything else is the daemon's own: its audio loop, the
microWakeWord detector, the FrameTap's speech level, the claim from
device/runtime/arbitration_hook.py, the election over the broker. A device answered when
it opened the turn (``state.changed`` to listening); it stood down when ``wake.arbitrated``
says ``stand_down``. The time added to the winner's response is that event's
``waited_ms``: from its own claim to its verdict. Wakes are spaced so that each is its own
election (every device back to idle, and more than the detector's 2 s refractory time).

Printed per configuration: how often exactly one device answered (of all wakes), how
often none or two+ did, the time added (p50/p95/max), how many wakes no device detected,
and as reference, how often exactly one device would have answered without arbitration
(only one detected it), and the spread of the detections (first to last device's
``input.wake_word``, wall clock): a winner that detected first waits until every device it
knows has claimed, so without broker latency the spread is most of what is added. Two
scene sets: "dev" (seed 1) and the held-back "validation" (seed 2), which is only scored;
both run on the same daemons, one start per device count and latency. Figures are wall
clock on the machine the run is on; ``--json`` writes every wake's outcome as well.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.device_harness import WAKE_PHRASE, voice  # noqa: E402
from support.latency_proxy import LatencyProxy  # noqa: E402
from support.mosquitto import Broker, make_pki, password_of  # noqa: E402

from edgevoice.device.events import EventType  # noqa: E402
from edgevoice.device.runtime.arbitration_hook import ARBITRATED_EVENT  # noqa: E402

SR = 16000
ROOM = "bench"
MAX_DEVICES = 3
LEAD_S = 0.4  # from sending the talker to its start: every room has it before it is due
REFRACTORY_S = 2.0  # the detector's (the okay_nabu manifest names none): one wake per election
SETTLE_S = 0.6  # after every device is idle, before the next wake
WAKE_DEADLINE_S = 10.0  # a wake whose turns have not ended by then is scored as it stands
CHILD = ROOT / "tests" / "support" / "room_daemon.py"
WAKE_EVENT = str(EventType.WAKE_WORD)


@dataclass(frozen=True)
class Scene:
    gains_db: tuple[float, ...]
    delays_s: tuple[float, ...]


def scenes(wakes: int, seed: int) -> list[Scene]:
    """Per wake, each room's level and delay; drawn for three rooms, so the two-device run
    hears the first two rooms of the three-device run."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(wakes):
        gains = rng.uniform(-18, -6, MAX_DEVICES)
        delays = rng.uniform(0, 0.030, MAX_DEVICES)
        out.append(Scene(tuple(float(g) for g in gains), tuple(float(d) for d in delays)))
    return out


@dataclass
class Child:
    user: str
    process: asyncio.subprocess.Process
    events: list[dict[str, Any]] = field(default_factory=list)
    peers: list[str] = field(default_factory=list)
    ready: bool = False
    reader: asyncio.Task[None] | None = None

    async def read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            try:
                body = json.loads(line)
            except ValueError:
                continue  # a library's print, not ours
            if body["type"] == "ready":
                self.ready = True
            elif body["type"] == "peers":
                self.peers = body["peers"]
            else:
                self.events.append(body)

    def send(self, body: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(body) + "\n").encode())

    def state(self) -> str:
        states = [e["data"]["state"] for e in self.events if e["type"] == "state.changed"]
        return states[-1] if states else "idle"

    def since(self, t: float) -> list[dict[str, Any]]:
        return [e for e in self.events if e["mono"] >= t]

    def cpu_s(self) -> float:
        """User + system CPU of the daemon's process and its children (the ASR worker)."""
        return _cpu_of_tree(self.process.pid)


def _cpu_of_tree(pid: int) -> float:
    total = 0.0
    tick = 100.0  # USER_HZ
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                for child in (task / "children").read_text().split():
                    total += _cpu_of_tree(int(child))
    return total


def overrides(user: str, url: str) -> list[str]:
    return [f"mqtt.url={url}", f"mqtt.username={user}", f"mqtt.password={password_of(user)}",
            f"device.id={user}", f"device.room={ROOM}", "llm.provider=local",
            "listen.mode=wakeword", "listen.wakeword=okay_nabu", "listen.follow_up_s=0",
            "listen.wake_timeout_s=0.5", "arbitration.window_ms=250"]


async def start_devices(folder: Path, devices: int, url: str) -> list[Child]:
    children = []
    for i in range(devices):
        user = f"dev{i + 1}"
        work = folder / user
        work.mkdir(parents=True, exist_ok=True)
        log = (work / "daemon.log").open("ab")
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(CHILD), str(work), *overrides(user, url),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log)
        log.close()
        child = Child(user, process)
        child.reader = asyncio.create_task(child.read(), name=f"read-{user}")
        children.append(child)
    deadline = time.monotonic() + 180
    while not all(c.ready and len(c.peers) == devices - 1 for c in children):
        if time.monotonic() > deadline or any(c.process.returncode is not None for c in children):
            raise RuntimeError(f"the daemons did not all start and meet (see {folder}/dev*/daemon.log): "
                               f"{[(c.user, c.ready, c.peers, c.process.returncode) for c in children]}")
        await asyncio.sleep(0.1)
    return children


async def stop_devices(children: list[Child]) -> None:
    for child in children:
        with contextlib.suppress(OSError, RuntimeError):
            child.send({"op": "stop"})
            assert child.process.stdin is not None
            child.process.stdin.close()
    for child in children:
        try:
            await asyncio.wait_for(child.process.wait(), 40)
        except TimeoutError:
            child.process.kill()  # our own child, by its pid
            await child.process.wait()
        if child.reader is not None:
            await child.reader


@dataclass(frozen=True)
class Outcome:
    detected: int  # devices that heard the wake word
    answered: tuple[str, ...]  # devices that opened the turn
    stood_down: tuple[str, ...]
    added_ms: float | None  # the one winner's claim-to-verdict wait
    spread_ms: float | None  # first to last detection, on the wall clock (what a winner waits out)
    passed: int  # devices that passed on a better claim before their own detection
    best_answered: bool | None  # the answer came from the highest score any device had
    odd: tuple[str, ...]  # what should not happen: two detections, a turn that did not end
    arbitrated: dict[str, dict[str, Any]] = field(default_factory=dict)  # each device's wake.arbitrated


def outcome(children: list[Child], start: float, stuck: list[str]) -> Outcome:
    detected = 0
    answered: list[str] = []
    stood_down: list[str] = []
    odd = [f"{user}: turn did not end" for user in stuck]
    waited: dict[str, float] = {}
    scores: dict[str, float] = {}
    arbitrated: dict[str, dict[str, Any]] = {}
    passed = 0
    heard_at: list[float] = []
    for child in children:
        events = child.since(start)
        # one detection per audio time (daemons before December 2026 emitted input.wake_word twice)
        wakes = sorted({e["data"]["audio_s"] for e in events if e["type"] == WAKE_EVENT})
        verdicts = [e for e in events if e["type"] == ARBITRATED_EVENT]
        verdicts_at = [e["mono"] for e in verdicts]
        listening = [e for e in events if e["type"] == "state.changed" and e["data"]["state"] == "listening"]
        detected += bool(wakes)
        heard_at += [e["mono"] for e in events if e["type"] == WAKE_EVENT][:1]
        if len(wakes) > 1:
            odd.append(f"{child.user}: {len(wakes)} detections")
        if listening:
            answered.append(child.user)
            if len(listening) > 1:
                odd.append(f"{child.user}: opened {len(listening)} turns")
        if verdicts:
            verdict = verdicts[0]["data"]
            waited[child.user] = float(verdict["waited_ms"])
            scores[child.user] = float(verdict["score"])
            arbitrated[child.user] = {**verdict, "mono": verdicts_at[0]}
            passed += bool(verdict.get("passed"))
            if verdict["verdict"] == "stand_down":
                stood_down.append(child.user)
                if listening:
                    odd.append(f"{child.user}: stood down and listened")
        elif wakes:
            odd.append(f"{child.user}: detected, never arbitrated")
        odd.extend(f"{child.user}: {e['type']} {e['data']}" for e in events
                   if e["type"] in ("audio.xrun", "audio.queue_dropped", "error"))
    added = waited.get(answered[0]) if len(answered) == 1 else None
    spread = round((max(heard_at) - min(heard_at)) * 1000, 1) if len(heard_at) > 1 else None
    best = (scores.get(answered[0], -1.0) >= max(scores.values())) if len(answered) == 1 and scores else None
    return Outcome(detected, tuple(answered), tuple(stood_down), added, spread, passed, best,
                   tuple(odd), arbitrated)


async def one_wake(children: list[Child], scene: Scene, phrase_s: float) -> Outcome:
    start = time.monotonic() + LEAD_S
    for i, child in enumerate(children):
        child.send({"op": "say", "text": WAKE_PHRASE, "at": start + scene.delays_s[i],
                    "gain_db": scene.gains_db[i]})
    # Every detection, claim and verdict is in by the end of the phrase plus two windows,
    # the broker's round trips and the front end's lag; then the winner's turn must end.
    await asyncio.sleep(LEAD_S + phrase_s + 1.2)
    deadline = start + WAKE_DEADLINE_S
    while time.monotonic() < deadline and any(c.state() != "idle" for c in children):  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    stuck = [c.user for c in children if c.state() != "idle"]
    result = outcome(children, start - 0.05, stuck)
    await asyncio.sleep(max(SETTLE_S, start + REFRACTORY_S + 0.5 - time.monotonic()))
    return result


def summary(results: list[Outcome]) -> dict[str, Any]:
    n = len(results)
    added = [r.added_ms for r in results if r.added_ms is not None]
    spread = [r.spread_ms for r in results if r.spread_ms is not None]
    return {
        "wakes": n,
        "exactly_one_pct": 100 * sum(len(r.answered) == 1 for r in results) / n,
        "none": sum(not r.answered for r in results),
        "several": sum(len(r.answered) > 1 for r in results),
        "added_p50_ms": statistics.median(added) if added else float("nan"),
        "added_p95_ms": float(np.percentile(added, 95)) if added else float("nan"),
        "added_max_ms": max(added) if added else float("nan"),
        "missed": sum(r.detected == 0 for r in results),
        "ref_exactly_one_pct": 100 * sum(r.detected == 1 for r in results) / n,
        "spread_p50_ms": statistics.median(spread) if spread else float("nan"),
        "passed": sum(r.passed for r in results),
        "best_answered_pct": 100 * sum(bool(r.best_answered) for r in results) / n,
        "odd": [o for r in results for o in r.odd],
    }


async def run_config(folder: Path, broker: Broker, devices: int, latency_ms: float, *,
                     sets: list[tuple[str, list[Scene]]], phrase_s: float) -> list[dict[str, Any]]:
    proxy = LatencyProxy(broker.port, latency_ms / 1000).start() if latency_ms else None
    url = proxy.url if proxy else broker.url
    rows = []
    try:
        began = time.monotonic()
        children = await start_devices(folder / f"{devices}dev-{latency_ms:g}ms", devices, url)
        print(f"# {devices} daemons up and met in {time.monotonic() - began:.1f} s",
              file=sys.stderr, flush=True)
        try:
            cpu0 = [c.cpu_s() for c in children]
            wall0 = time.monotonic()
            for label, wakes in sets:
                results = []
                for k, scene in enumerate(wakes):
                    results.append(await one_wake(children, scene, phrase_s))
                    r = results[-1]
                    print(f"#   {label} {devices} dev {latency_ms:g} ms wake {k + 1}/{len(wakes)}: "
                          f"detected {r.detected}, answered {list(r.answered)}, added {r.added_ms} ms, "
                          f"spread {r.spread_ms} ms, passed {r.passed}, best {r.best_answered}"
                          + (f", odd {list(r.odd)}" if r.odd else ""), file=sys.stderr, flush=True)
                rows.append({"set": label, "devices": devices, "latency_ms": latency_ms,
                             **summary(results), "outcomes": [r.__dict__ for r in results]})
            wall = time.monotonic() - wall0
            cpu = [c.cpu_s() - c0 for c, c0 in zip(children, cpu0, strict=True)]
            n = sum(len(w) for _, w in sets)
            print(f"# {devices} daemons, {latency_ms:g} ms: {n} wakes in {wall:.0f} s "
                  f"({wall / n:.2f} s a wake); CPU per daemon at 1x: "
                  + ", ".join(f"{c / wall * 100:.0f} %" for c in cpu) + " of one core",
                  file=sys.stderr, flush=True)
        finally:
            await stop_devices(children)
    finally:
        if proxy is not None:
            proxy.stop()
    return rows


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    phrase_s = len(voice(WAKE_PHRASE)) / SR
    sets = [("dev", scenes(max(5, args.wakes // 4), 1)), ("validation", scenes(args.wakes, 2))]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="edgevoice-arbd-") as tmp:
        folder = Path(tmp)
        (folder / "broker").mkdir()
        broker = Broker(folder / "broker", make_pki(folder / "pki"), users=("dev1", "dev2", "dev3", "fleet"))
        broker.start()
        try:
            for devices in args.devices:
                for latency in args.latency:
                    rows += await run_config(folder, broker, devices, latency, sets=sets, phrase_s=phrase_s)
        finally:
            broker.stop()
    print(f"wake phrase {phrase_s:.2f} s; window 250 ms", file=sys.stderr)
    print("| set | devices | broker latency (ms) | wakes | exactly one answers | none | two+ | "
          "added p50 (ms) | added p95 (ms) | added max (ms) | missed | no arbitration: exactly one | "
          "detections spread p50 (ms) | passes | best score answered |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in sorted(rows, key=lambda r: (r["set"] != "dev", r["devices"], r["latency_ms"])):
        print(f"| {r['set']} | {r['devices']} | {r['latency_ms']:g} | {r['wakes']} "
              f"| {r['exactly_one_pct']:.1f} % | {r['none']} | {r['several']} "
              f"| {r['added_p50_ms']:.1f} | {r['added_p95_ms']:.1f} | {r['added_max_ms']:.1f} "
              f"| {r['missed']} | {r['ref_exactly_one_pct']:.1f} % | {r['spread_p50_ms']:.1f} "
              f"| {r['passed']} | {r['best_answered_pct']:.1f} % |")
    odd = [(r["set"], r["devices"], r["latency_ms"], o) for r in rows for o in r["odd"]]
    if odd:
        print("\nOdd:\n" + "\n".join(f"- {s} {d} devices {lat:g} ms: {o}" for s, d, lat, o in odd))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wakes", type=int, default=100,
                        help="validation wakes per configuration (dev: a quarter, at least 5); "
                             "a wake takes 3.2 s, so 100 runs in ~27 min on a 2-core x86-64 "
                             "and 200 in ~54 min")
    parser.add_argument("--devices", type=int, nargs="+", default=[2, 3], choices=(2, 3))
    parser.add_argument("--latency", type=float, nargs="+", default=[0.0, 50.0])
    parser.add_argument("--json", default="", help="also write every wake's outcome here")
    args = parser.parse_args()
    rows = asyncio.run(main_async(args))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
