"""A device process for the last-will test: an MqttBridge with a FakeTarget, run until
killed. ``python mqtt_device_proc.py URL USER PASSWORD CONFIG_PATH``; prints ``ready``
once connected."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.mqtt_fakes import FakeTarget

from edgevoice.device.config.loader import build_config
from edgevoice.device.events import EventBus
from edgevoice.device.mqtt import MqttBridge


async def main(url: str, user: str, password: str, config_path: str) -> None:
    config = build_config([("argv", {"mqtt": {"url": url, "username": user, "password": password,
                                              "telemetry_interval_s": 0.5}})])
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    bridge = MqttBridge(config.mqtt, config.device, user, bus, FakeTarget(bus, Path(config_path)))
    await bridge.start()
    while not bridge.connected:  # noqa: ASYNC110 - connected is set by paho's thread
        await asyncio.sleep(0.01)
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
