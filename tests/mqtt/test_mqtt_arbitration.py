"""Wake-word arbitration between real bridges on a real mosquitto with the shipped ACL,
directly and through a proxy that adds 50 ms each way."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest
from support.latency_proxy import LatencyProxy
from support.mosquitto import Broker
from support.mqtt_fakes import FakeTarget, await_until, mqtt_config

from edgevoice.device.config.schema import ArbitrationConfig, DeviceConfig
from edgevoice.device.events import EventBus
from edgevoice.device.mqtt import MqttBridge
from edgevoice.device.mqtt.arbitration import WakeArbiter
from edgevoice.device.mqtt.election import Verdict


@asynccontextmanager
async def room_device(broker: Broker, user: str, tmp_path: Path, *, room: str = "kitchen",
                      url: str | None = None, window_ms: int = 250) -> AsyncIterator[MqttBridge]:
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    config = mqtt_config(broker, user, **({"url": url} if url else {}))
    target = FakeTarget(bus, tmp_path / f"{user}.toml")
    bridge = MqttBridge(config, DeviceConfig(room=room), user, bus, target,
                        arbitration=ArbitrationConfig(window_ms=window_ms))
    await bridge.start()
    try:
        assert await await_until(lambda: bridge.connected, 10), broker.log
        yield bridge
    finally:
        await bridge.stop()


def arbiter(bridge: MqttBridge) -> WakeArbiter:
    assert bridge.arbiter is not None
    return bridge.arbiter


async def know_each_other(bridges: list[MqttBridge], timeout_s: float = 5.0) -> None:
    want = len(bridges) - 1
    assert await await_until(
        lambda: all(len(arbiter(b).room.peers(time.monotonic())) == want for b in bridges), timeout_s)


async def wake_together(bridges: list[MqttBridge], scores: list[float],
                        skews_s: list[float]) -> list[tuple[Verdict, float]]:
    async def one(bridge: MqttBridge, score: float, skew: float) -> tuple[Verdict, float]:
        await asyncio.sleep(skew)
        started = time.monotonic()
        verdict = await arbiter(bridge).claim(score)
        return verdict, time.monotonic() - started

    return list(await asyncio.gather(*(one(b, s, k) for b, s, k in zip(bridges, scores, skews_s,
                                                                        strict=True))))


async def test_three_devices_elect_the_loudest_and_decide_before_the_window(broker: Broker,
                                                                           tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        bridges = [await stack.enter_async_context(room_device(broker, u, tmp_path))
                   for u in ("dev1", "dev2", "dev3")]
        await know_each_other(bridges)
        for scores, winner in (([0.5, 0.9, 0.7], 1), ([0.8, 0.2, 0.3], 0), ([0.4, 0.4, 0.4], 0)):
            results = await wake_together(bridges, scores, [0.0, 0.01, 0.02])
            verdicts = [v for v, _ in results]
            assert verdicts.count(Verdict.ANSWER) == 1, (scores, results)
            assert verdicts[winner] is Verdict.ANSWER, (scores, results)
            # everybody claimed: nobody waited for the 250 ms window to close
            assert max(waited for _, waited in results) < 0.2, results
            await asyncio.sleep(0.6)  # the next wake word is another election


async def test_alone_in_the_room_or_without_a_broker_answers_at_once(broker: Broker, tmp_path: Path) -> None:
    async with room_device(broker, "dev1", tmp_path) as alone, room_device(broker, "dev2", tmp_path,
                                                                          room="hall") as elsewhere:
        for bridge in (alone, elsewhere):
            started = time.monotonic()
            assert await arbiter(bridge).claim(0.1) is Verdict.ANSWER
            assert time.monotonic() - started < 0.02
        broker.stop()
        assert await await_until(lambda: not alone.connected, 10)
        started = time.monotonic()
        assert await arbiter(alone).claim(0.1) is Verdict.ANSWER  # no broker: exactly as today
        assert time.monotonic() - started < 0.02


async def test_a_device_that_leaves_is_not_waited_for(broker: Broker, tmp_path: Path) -> None:
    async with room_device(broker, "dev1", tmp_path) as first:
        async with room_device(broker, "dev2", tmp_path) as second:
            await know_each_other([first, second])
        assert await await_until(lambda: not arbiter(first).room.peers(time.monotonic()), 5)  # its bye
        started = time.monotonic()
        assert await arbiter(first).claim(0.1) is Verdict.ANSWER
        assert time.monotonic() - started < 0.02


@pytest.mark.parametrize("devices", [2, 3])
async def test_it_holds_with_50_ms_of_broker_latency(broker: Broker, tmp_path: Path, devices: int) -> None:
    proxy = LatencyProxy(broker.port, 0.050).start()
    try:
        async with AsyncExitStack() as stack:
            bridges = [await stack.enter_async_context(room_device(broker, f"dev{i + 1}", tmp_path,
                                                                   url=proxy.url))
                       for i in range(devices)]
            await know_each_other(bridges, 10)
            for round_ in range(5):
                scores = [0.3 + 0.1 * ((i + round_) % devices) for i in range(devices)]
                results = await wake_together(bridges, scores, [0.015 * i for i in range(devices)])
                verdicts = [v for v, _ in results]
                assert verdicts.count(Verdict.ANSWER) == 1, (round_, scores, results)
                assert verdicts[scores.index(max(scores))] is Verdict.ANSWER
                # a claim takes ~100 ms (50 ms to the broker, 50 back) and a loser's word as
                # long again: the winner knows in ~200 ms, before the second window ends
                assert max(w for _, w in results) < 0.5, results
                await asyncio.sleep(0.6)
    finally:
        proxy.stop()


async def test_a_quieter_device_passes_so_the_winner_need_not_wait_for_its_detector(
        broker: Broker, tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        bridges = [await stack.enter_async_context(room_device(broker, u, tmp_path))
                   for u in ("dev1", "dev2", "dev3")]
        await know_each_other(bridges)
        loud, quiet, busy = (arbiter(b) for b in bridges)
        quiet.claim_bound = lambda: 0.2  # it hears the talker, but far quieter
        busy.claim_bound = lambda: 0.0  # in a turn of its own: it will not claim
        started = time.monotonic()
        assert await loud.claim(0.6) is Verdict.ANSWER
        waited = time.monotonic() - started
        # Without the passes it would wait for both to claim, or for the 250 ms window.
        assert waited < 0.1, waited
        assert await await_until(lambda: quiet.passes == 1 and busy.passes == 1, 2)
        # The quieter device's detector fires 150 ms later, with a score that would beat
        # the winner's: it passed, so it stands down, without a claim or a sound.
        await asyncio.sleep(0.15)
        assert await quiet.claim(0.9) is Verdict.STAND_DOWN
        assert quiet.last_passed
        await asyncio.sleep(0.6)  # a later wake word is its own election again
        quiet.claim_bound = None
        results = await wake_together(bridges, [0.3, 0.7, 0.1], [0.0, 0.0, 0.0])
        assert [v for v, _ in results] == [Verdict.STAND_DOWN, Verdict.ANSWER, Verdict.STAND_DOWN]
