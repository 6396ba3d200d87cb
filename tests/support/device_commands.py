"""Fleet commands to one device over a real broker, answered on ``…/cmd_result``."""

from __future__ import annotations

from typing import Any

from support.mosquitto import Broker, password_of
from support.mqtt_fakes import Observer


def device_overrides(broker: Broker, user: str, group: str = "") -> list[str]:
    """The harness overrides that put a daemon on ``broker`` as ``user``."""
    return [f"mqtt.url={broker.url}", f"mqtt.username={user}", f"mqtt.password={password_of(user)}",
            f"device.id={user}", f"device.group={group}", "llm.provider=local",
            "mqtt.telemetry_interval_s=5"]


class Commands:
    """``await command(name, args)`` → the device's answer (a dict)."""

    def __init__(self, observer: Observer, device_id: str) -> None:
        self.observer = observer
        self.device_id = device_id
        self.n = 0
        observer.subscribe(f"edgevoice/{device_id}/cmd_result", f"edgevoice/{device_id}/status")

    async def online(self, timeout_s: float = 30) -> None:
        await self.observer.await_for(lambda m: m.topic == f"edgevoice/{self.device_id}/status"
                                      and m.json().get("state") == "online", timeout_s)

    async def __call__(self, name: str, args: dict[str, Any] | None = None,
                       timeout_s: float = 30) -> dict[str, Any]:
        self.n += 1
        request_id = f"{name}-{self.n}"
        self.observer.publish(f"edgevoice/{self.device_id}/cmd/{name}", {"id": request_id, **(args or {})})
        topic = f"edgevoice/{self.device_id}/cmd_result"
        hits = await self.observer.await_for(
            lambda m: m.topic == topic and m.json().get("id") == request_id, timeout_s)
        answer: dict[str, Any] = hits[-1].json()
        return answer
