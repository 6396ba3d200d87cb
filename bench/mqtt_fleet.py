"""Fleet scale against a local mosquitto, and telemetry's cost on a device's event loop.

    ./dev bench mqtt_fleet                 # 100 and 500 simulated devices
    ./dev bench mqtt_fleet --sizes 100     # fewer

Each simulated device is a real :class:`MqttBridge` (its own paho client and network
thread, status, state, telemetry every ``--interval`` s, commands) with an in-memory
command target; worker processes host up to 100 devices each. The broker is started
here with the shipped ACL, a password file with one user per device, and no TLS.

Printed per fleet size: time until every device is online, ``fleet list`` time,
``fleet send --all ping`` time until every answer is in, and the CPU the broker and
the device processes used over a steady window. Then, on one device, the largest and
the 99th-percentile lateness of a 5 ms event-loop ticker with and without the bridge
publishing telemetry (every 0.1 s) and events (200/s) — what MQTT costs the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.mosquitto import Broker, make_pki, password_of  # noqa: E402

from edgevoice.device.config.loader import build_config  # noqa: E402
from edgevoice.device.config.schema import GpioOutputConfig  # noqa: E402
from edgevoice.device.control import DeviceControl  # noqa: E402
from edgevoice.device.events import EventBus  # noqa: E402
from edgevoice.device.mqtt import MqttBridge  # noqa: E402
from edgevoice.device.mqtt.fleet import Addressee, FleetClient  # noqa: E402

PER_WORKER = 100


class MemoryTarget(DeviceControl):
    """A device's runtime side, held in memory."""

    def __init__(self) -> None:
        self.volume = 1.0
        self.muted = False

    async def say(self, text: str) -> None:
        return None

    async def interrupt(self) -> None:
        return None

    async def reset_session(self) -> None:
        return None

    async def set_volume(self, level: float) -> float:
        self.volume = level
        return level

    async def end_conversation(self) -> None:
        return None

    async def start_over(self) -> None:
        return None

    async def gpio_output(self, output: GpioOutputConfig, on: bool | None) -> bool:
        return bool(on)

    async def mute(self, mic: bool) -> None:
        self.muted = mic

    async def get_config(self) -> dict[str, Any]:
        return {}

    async def set_config(self, patch: dict[str, Any]) -> dict[str, Any]:
        return {"changed": [], "restart_required": False}

    async def reload(self) -> None:
        return None

    async def restart(self) -> None:
        return None

    async def fetch_model(self, name: str) -> dict[str, Any]:
        return {"name": name}

    async def state(self) -> dict[str, Any]:
        return {"state": "idle", "volume": self.volume, "mic_muted": self.muted, "provider": "local",
                "config_revision": "bench"}


def device_config(url: str, user: str, interval: float, group: str) -> Any:
    return build_config([("bench", {
        "device": {"group": group},
        "mqtt": {"url": url, "username": user, "password": password_of(user),
                 "telemetry_interval_s": interval, "reconnect_min_s": 0.5, "reconnect_max_s": 5.0,
                 "command_burst": 1000},
    })])


def counters() -> dict[str, Any]:
    return {"turns": 12, "barge_ins": 2, "xruns": 0, "input_dbfs": -48.2, "echo_reduction_db": 33.1,
            "echo_delay_ms": 41.0, "agent_errors": {},
            "latency_ms": {"voice_to_voice": {"p50": 710, "p95": 980}}}


# --- worker: a process hosting many devices ---------------------------------------------


async def worker_main(url: str, first: int, count: int, interval: float) -> None:
    bridges = []
    for index in range(first, first + count):
        user = f"dev{index:04d}"
        config = device_config(url, user, interval, f"g{index % 10}")
        bus = EventBus()
        bus.bind(asyncio.get_running_loop())
        bridge = MqttBridge(config.mqtt, config.device, user, bus, MemoryTarget(), counters)
        await bridge.start()
        bridges.append(bridge)
    while not all(b.connected for b in bridges):  # noqa: ASYNC110 - set by paho's threads
        await asyncio.sleep(0.05)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.read)  # until the parent closes our stdin
    for bridge in bridges:
        await bridge.stop()


# --- the parent -----------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fleet_size_run(broker: Broker, size: int, interval: float, steady_s: float) -> dict[str, float]:
    operator = build_config([("bench", {"mqtt": {"url": broker.url, "username": "fleet",
                                                 "password": password_of("fleet")}})]).mqtt
    started = time.monotonic()
    workers = []
    for first in range(0, size, PER_WORKER):
        workers.append(subprocess.Popen(
            [sys.executable, __file__, "--worker", broker.url, str(first),
             str(min(PER_WORKER, size - first)), str(interval)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        ))
    try:
        for worker in workers:
            assert worker.stdout is not None
            if worker.stdout.readline().strip() != "ready":
                raise RuntimeError("a worker failed to start its devices")
        online_s = time.monotonic() - started
        time.sleep(interval)  # every device has sent telemetry
        with FleetClient(operator) as fleet:
            list_times, send_times = [], []
            for _ in range(3):
                t0 = time.monotonic()
                devices = fleet.list_devices(timeout_s=30)
                list_times.append(time.monotonic() - t0)
                assert sum(d.online for d in devices) == size, f"{len(devices)} listed"
            expected = [d.id for d in devices]
            for _ in range(3):
                report = fleet.send(Addressee(everyone=True), "ping", {}, wait_s=30, expected=expected)
                if report.missing:
                    raise RuntimeError(f"{len(report.missing)} device(s) did not answer")
                send_times.append(report.elapsed_s)
        broker_cpu0 = cpu_seconds(broker.pid())
        client_cpu0 = sum(cpu_seconds(w.pid) for w in workers)
        time.sleep(steady_s)
        broker_cpu = cpu_seconds(broker.pid()) - broker_cpu0
        client_cpu = sum(cpu_seconds(w.pid) for w in workers) - client_cpu0
    finally:
        for worker in workers:
            if worker.stdin:
                worker.stdin.close()
        for worker in workers:
            try:
                worker.wait(20)
            except subprocess.TimeoutExpired:
                worker.kill()
    return {
        "online_s": online_s,
        "list_s": statistics.median(list_times),
        "send_s": statistics.median(send_times),
        "broker_cpu_pct": 100 * broker_cpu / steady_s,
        "client_cpu_pct": 100 * client_cpu / steady_s,
    }


async def loop_cost(url: str | None, seconds: float) -> dict[str, float]:
    """A 5 ms ticker on one device's loop, with a bridge on ``url`` or none: wall-clock
    lateness per iteration (includes other processes on a shared machine and the GIL
    held by paho's thread) and CPU time of the loop thread per iteration (the work
    the loop itself did between two ticks, unaffected by other processes). In ms."""
    bridge = None
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    if url is not None:
        config = device_config(url, "dev9999", 0.1, "")
        bridge = MqttBridge(config.mqtt, config.device, "dev9999", bus, MemoryTarget(), counters)
        await bridge.start()
        while not bridge.connected:  # noqa: ASYNC110 - set by paho's thread
            await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    late: list[float] = []
    work: list[float] = []
    end = loop.time() + seconds
    while loop.time() < end:
        t0, c0 = loop.time(), time.thread_time()
        await asyncio.sleep(0.005)
        late.append((loop.time() - t0 - 0.005) * 1000)
        work.append((time.thread_time() - c0) * 1000)
        if bridge is not None:  # one event per tick: ~200 events/s
            bus.emit("metrics.turn", voice_to_voice_ms=700.0, stage_ms={"asr": 120.0})
    if bridge is not None:
        await bridge.stop()
    late.sort()
    work.sort()
    p99 = int(len(late) * 0.99)
    return {"late_max": late[-1], "late_p99": late[p99], "work_max": work[-1], "work_p99": work[p99]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--interval", type=float, default=5.0, help="telemetry interval of each device")
    parser.add_argument("--steady", type=float, default=10.0, help="CPU measuring window in seconds")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url, first, count, interval = args.worker
        asyncio.run(worker_main(url, int(first), int(count), float(interval)))
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)
        users = tuple(f"dev{i:04d}" for i in range(max(args.sizes))) + ("dev9999", "fleet")
        broker = Broker(folder / "broker", make_pki(folder / "pki"), users=users)
        broker.write_config()
        broker.start()
        try:
            rows = []
            for size in args.sizes:
                print(f"running {size} devices ...", file=sys.stderr, flush=True)
                rows.append((size, fleet_size_run(broker, size, args.interval, args.steady)))
            print(f"\nFleet against local mosquitto (telemetry every {args.interval:g} s per device, "
                  f"CPU over {args.steady:g} s steady state; 100% = one core)\n")
            print("| devices | all online (s) | fleet list (ms) | send --all ping, all answers (ms) "
                  "| broker CPU % | device processes CPU % | CPU per device (ms/s) |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            for size, r in rows:
                per_device = 10 * (r["broker_cpu_pct"] + r["client_cpu_pct"]) / size
                print(f"| {size} | {r['online_s']:.2f} | {1000 * r['list_s']:.0f} | {1000 * r['send_s']:.0f} "
                      f"| {r['broker_cpu_pct']:.1f} | {r['client_cpu_pct']:.1f} | {per_device:.2f} |")
            base = asyncio.run(loop_cost(None, 5.0))
            busy = asyncio.run(loop_cost(broker.url, 5.0))
            print("\nOne device's event loop, a 5 ms ticker for 5 s (ms per loop iteration)\n")
            print("| bridge | lateness max | lateness p99 | loop-thread CPU max | loop-thread CPU p99 |")
            print("|---|---:|---:|---:|---:|")
            for label, r in (("none (baseline)", base), ("telemetry every 0.1 s + 200 events/s", busy)):
                print(f"| {label} | {r['late_max']:.2f} | {r['late_p99']:.2f} | {r['work_max']:.2f} "
                      f"| {r['work_p99']:.2f} |")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
