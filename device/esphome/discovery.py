"""Zeroconf: the ``_esphomelib._tcp`` advertisement Home Assistant discovers devices by.

The TXT record carries what HA's ESPHome discovery reads: the MAC (without colons, lower
case; HA matches a discovered device to a configured one by it), the firmware version,
the friendly name, and ``api_encryption`` when the device wants a key.
"""

from __future__ import annotations

import socket
from typing import Any

from edgevoice.device.esphome.messages import ESPHOME_VERSION

SERVICE_TYPE = "_esphomelib._tcp.local."
NOISE_NAME = "Noise_NNpsk0_25519_ChaChaPoly_SHA256"


def service_info(node: str, friendly_name: str, mac: str, port: int, version: str, *,
                 host: str = "0.0.0.0", encrypted: bool = False) -> Any:
    """The zeroconf ServiceInfo the device registers (built without any network traffic)."""
    from zeroconf import ServiceInfo


    properties = {
        "version": ESPHOME_VERSION,
        "mac": mac.replace(":", "").lower(),
        "platform": "linux",
        "board": "edgevoice",
        "network": "ethernet",
        "friendly_name": friendly_name,
        "project_name": "edgevoice.voice-satellite",
        "project_version": version,
    }
    if encrypted:
        properties["api_encryption"] = NOISE_NAME
    addresses = [] if host in ("0.0.0.0", "") else [socket.inet_aton(host)]
    return ServiceInfo(SERVICE_TYPE, f"{node}.{SERVICE_TYPE}", port=port, properties=properties,
                       server=f"{node}.local.", addresses=addresses or None)


async def advertise(info: Any) -> Any:
    """Register ``info`` on every interface (or the one the API listens on); returns the
    AsyncZeroconf to withdraw later."""
    from zeroconf import IPVersion
    from zeroconf.asyncio import AsyncZeroconf

    if not info.addresses:
        info.addresses = [socket.inet_aton(a) for a in _local_addresses()]
    zc = AsyncZeroconf(ip_version=IPVersion.V4Only)
    await zc.async_register_service(info)
    zc.edgevoice_info = info  # type: ignore[attr-defined]
    return zc


async def withdraw(zc: Any) -> None:
    await zc.async_unregister_service(zc.edgevoice_info)
    await zc.async_close()


def _local_addresses() -> list[str]:
    import ifaddr

    found = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if isinstance(ip.ip, str) and not ip.ip.startswith("127."):
                found.append(ip.ip)
    return found or ["127.0.0.1"]


__all__ = ["SERVICE_TYPE", "advertise", "service_info", "withdraw"]
