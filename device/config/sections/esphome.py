"""The ESPHome native API surface: Home Assistant adopts the device as an Assist satellite."""

from __future__ import annotations

import binascii
from dataclasses import dataclass

from edgevoice.device.config.fields import setting


@dataclass(frozen=True, slots=True)
class EsphomeConfig:
    """The device side of the ESPHome native API (docs/homeassistant.md)."""

    enabled: bool = setting(
        False, "Serve the ESPHome native API, so Home Assistant's ESPHome integration adopts the "
        "device as a voice satellite (HA's pipeline answers while it is subscribed).", restart=True,
    )
    host: str = setting(
        "0.0.0.0", "Address to listen on (127.0.0.1 keeps the API on this machine).", restart=True,
    )
    port: int = setting(6053, "TCP port (ESPHome's default is 6053).", minimum=1, maximum=65535,
                        restart=True)
    encryption_key: str = setting(
        "", "Noise pre-shared key, base64 of 32 bytes (as ESPHome's api.encryption.key; make one "
        "with `openssl rand -base64 32`). Empty: plaintext. Give the same key to Home Assistant.",
        secret=True, restart=True,
    )
    name: str = setting(
        "", "The node name Home Assistant sees (lower case, digits and '-'). Empty: "
        "'edgevoice-' and the end of the device id.", restart=True,
    )
    friendly_name: str = setting("", "Shown in Home Assistant. Empty: [device] name, else the node name.",
                                 restart=True)
    max_clients: int = setting(
        2, "API clients at once (Home Assistant is one); a client beyond this is refused.",
        minimum=1, maximum=8, restart=True,
    )
    zeroconf: bool = setting(
        True, "Advertise _esphomelib._tcp over mDNS so Home Assistant discovers the device.",
        restart=True,
    )
    timer_ring_s: float = setting(
        300.0, "A finished timer rings until 'stop' is said or the button is pressed, at most "
        "this long.", minimum=1.0, maximum=3600.0, restart=True,
    )
    stop_phrases: tuple[str, ...] = setting(
        ("stop",), "Words that stop a ringing timer (heard by the device's own recognizer; no "
        "wake word needed while it rings).", restart=True,
    )
    continue_delay_s: float = setting(
        0.3, "After a reply Home Assistant continues, wait this long before listening again "
        "(the reply's echo dies away).", minimum=0.0, maximum=5.0, restart=True,
    )

    def problems(self) -> list[tuple[str, str]]:
        """Checks beyond a key's type and range: (key, what is wrong and what to do)."""
        found: list[tuple[str, str]] = []
        if self.encryption_key and len(decode_key(self.encryption_key) or b"") != 32:
            found.append(("encryption_key", "expected base64 of 32 bytes (openssl rand -base64 32)"))
        if self.name and not all(c.isascii() and (c.isalnum() or c == "-") for c in self.name):
            found.append(("name", "use lower-case letters, digits and '-' only"))
        return found


def decode_key(text: str) -> bytes | None:
    """The raw pre-shared key, or None when ``text`` is not base64."""
    try:
        return binascii.a2b_base64(text.strip().encode("ascii"), strict_mode=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None
