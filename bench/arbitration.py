"""Wake-word arbitration: two and three devices hearing the same talker, on one mosquitto.

    .venv/bin/python bench/arbitration.py                 # 2 and 3 devices, 0 and 50 ms
    .venv/bin/python bench/arbitration.py --wakes 50      # fewer

Each device has its own simulated room: the bundled voice says "okay nabu" at a level
and a distance of its own (-18..-6 dB, 0..30 ms of acoustic delay, -60 dBFS of noise,
all drawn per wake), and the real microWakeWord detector (edgevoice's WakeWordDetector,
okay_nabu) hears it. Its detection time, probability and speech level (the FrameTap's
rule) are what that device would claim with. Then each wake is replayed in real time on
real MqttBridges — one per device, each with its own paho client — against mosquitto with
the shipped ACL, directly or through a loopback proxy that delays every packet by 50 ms
each way: every device claims at its own detection time and waits for its verdict.

Printed per configuration: how often exactly one device answered, how often none or two
did, and the time arbitration added to the winner's response (claim to verdict). The
reference in the same table is no arbitration (every device that heard it answers, nothing
added). Two scene sets: "dev" (seed 1) and the held-back "validation" (seed 2), which is
only scored. Figures are wall clock on the machine the run is on.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.device_harness import WAKE_PHRASE, voice  # noqa: E402
from support.latency_proxy import LatencyProxy  # noqa: E402
from support.mosquitto import Broker, make_pki  # noqa: E402
from support.mqtt_fakes import FakeTarget, mqtt_config  # noqa: E402

from edgevoice.device.config.schema import ArbitrationConfig, DeviceConfig  # noqa: E402
from edgevoice.device.events import EventBus  # noqa: E402
from edgevoice.device.mqtt import MqttBridge  # noqa: E402
from edgevoice.device.mqtt.election import Verdict  # noqa: E402

SR = 16000
GAP_S = 0.6  # between wakes: more than two windows, so each is its own election


@dataclass(frozen=True)
class Hearing:
    at_s: float  # detection time on the device's audio clock
    score: float


def scenes(devices: int, wakes: int, seed: int) -> list[list[Hearing | None]]:
    """What each device hears of each wake (None: it did not detect the wake word)."""
    from edgevoice.device.assembly.hearing import build_wakeword
    from edgevoice.device.config.loader import build_config

    talker = voice(WAKE_PHRASE).astype(np.float32)
    rng = np.random.default_rng(seed)
    listen = build_config([("bench", {"listen": {"mode": "wakeword", "wakeword": "okay_nabu"}})]).listen
    detectors = [build_wakeword(listen) for _ in range(devices)]
    out: list[list[Hearing | None]] = []
    for _ in range(wakes):
        row: list[Hearing | None] = []
        for detector in detectors:
            gain = 10 ** (rng.uniform(-18, -6) / 20)
            delay = int(rng.uniform(0, 0.030) * SR)
            n = int(0.5 * SR) + delay + len(talker) + int(0.8 * SR)
            mic = rng.normal(0, 32768 * 10 ** (-60 / 20), n).astype(np.float32)
            start = int(0.5 * SR) + delay
            mic[start:start + len(talker)] += talker * gain
            pcm = np.clip(mic, -32768, 32767).astype(np.int16)
            detector.reset()
            found: Hearing | None = None
            powers: list[float] = []
            for i in range(0, len(pcm) - 160, 160):
                frame = pcm[i:i + 160]
                powers = [*powers[-99:], float(np.mean(np.square(frame.astype(np.float32)))) / 2.0 ** 30]
                hits = detector.process(frame)
                if hits and found is None:
                    loud = sorted(powers)[int(len(powers) * 0.7):]
                    level = float(np.sqrt(np.mean(loud)))
                    found = Hearing((i + 160) / SR, hits[0].probability * level)
            row.append(found)
        out.append(row)
    return out


async def run(broker: Broker, folder: Path, devices: int, latency_ms: float,
              heard: list[list[Hearing | None]]) -> dict[str, float]:
    proxy = LatencyProxy(broker.port, latency_ms / 1000).start() if latency_ms else None
    url = proxy.url if proxy else broker.url
    users = [f"dev{i + 1}" for i in range(devices)]
    one = none = several = 0
    added: list[float] = []
    try:
        async with AsyncExitStack() as stack:
            bridges = []
            for user in users:
                bus = EventBus()
                bus.bind(asyncio.get_running_loop())
                bridge = MqttBridge(mqtt_config(broker, user, url=url), DeviceConfig(room="bench"), user, bus,
                                    FakeTarget(bus, folder / f"{user}.toml"),
                                    arbitration=ArbitrationConfig(window_ms=250))
                await bridge.start()
                stack.push_async_callback(bridge.stop)
                bridges.append(bridge)
            deadline = time.monotonic() + 20
            for _ in range(400):  # until every device knows the others (their hello / here)
                if time.monotonic() > deadline or all(
                        b.arbiter is not None and len(b.arbiter.room.peers(time.monotonic())) == devices - 1
                        for b in bridges):
                    break
                await asyncio.sleep(0.05)
            for row in heard:
                base = min(h.at_s for h in row if h is not None) if any(row) else 0.0

                async def device(bridge: MqttBridge, hearing: Hearing | None,
                                 base: float = base) -> tuple[Verdict, float] | None:
                    if hearing is None:
                        return None
                    await asyncio.sleep(hearing.at_s - base)
                    assert bridge.arbiter is not None
                    started = time.monotonic()
                    verdict = await bridge.arbiter.claim(hearing.score)
                    return verdict, time.monotonic() - started

                results = await asyncio.gather(*(device(b, h) for b, h in zip(bridges, row, strict=True)))
                answers = [r for r in results if r is not None and r[0] is Verdict.ANSWER]
                if len(answers) == 1:
                    one += 1
                    added.append(answers[0][1] * 1000)
                elif not answers:
                    none += 1
                else:
                    several += 1
                await asyncio.sleep(GAP_S)
    finally:
        if proxy is not None:
            proxy.stop()
    n = len(heard)
    heard_any = [row for row in heard if any(row)]
    ref_one = sum(1 for row in heard_any if sum(h is not None for h in row) == 1)
    return {
        "wakes": n, "exactly_one_pct": 100 * one / n, "none": none, "several": several,
        "added_p50_ms": statistics.median(added) if added else float("nan"),
        "added_p95_ms": float(np.percentile(added, 95)) if added else float("nan"),
        "added_max_ms": max(added) if added else float("nan"),
        "ref_exactly_one_pct": 100 * ref_one / n,
        "missed": n - len(heard_any),
    }


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="edgevoice-arb-") as tmp:
        folder = Path(tmp)
        broker = Broker(folder / "broker", make_pki(folder / "pki"),
                        users=("dev1", "dev2", "dev3", "fleet"))
        broker.start()
        try:
            print("| set | devices | broker latency (ms) | wakes | exactly one answers | none | two+ | "
                  "added p50 (ms) | added p95 (ms) | added max (ms) | no arbitration: exactly one |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for label, seed, wakes in (("dev", 1, max(10, args.wakes // 4)), ("validation", 2, args.wakes)):
                for devices in args.devices:
                    heard = scenes(devices, wakes, seed)
                    for latency in args.latency:
                        r = await run(broker, folder, devices, latency, heard)
                        print(f"| {label} | {devices} | {latency:g} | {r['wakes']} "
                              f"| {r['exactly_one_pct']:.1f} % | {r['none']} | {r['several']} "
                              f"| {r['added_p50_ms']:.1f} | "
                              f"{r['added_p95_ms']:.1f} | {r['added_max_ms']:.1f} | "
                              f"{r['ref_exactly_one_pct']:.1f} % |", flush=True)
        finally:
            broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--devices", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--latency", type=float, nargs="+", default=[0.0, 50.0])
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
