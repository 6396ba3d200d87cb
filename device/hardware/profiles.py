"""Hardware profiles: recognise the connected audio hardware and propose a preset.

The facts come from ``/proc/asound/cards`` (card index, id, driver, name), each card's
``/proc/asound/cardN/usbid`` and ``pcmNc``/``pcmNp`` entries (capture, playback), and
``/sys/bus/usb/devices/*/idVendor``/``idProduct``. Everything reads under a ``root``
prefix; :func:`suggest` is pure, so it is tested on written-out trees of real boards.

Each profile has a preset shipped as package data (``edgevoice.device.hardware.presets``:
``profiles/<name>.toml``, and the ALSA PCMs it names in ``alsa/``); the image also copies
them to ``/opt/edgevoice/share/profiles`` and ``/etc/alsa/conf.d``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgevoice.device.hardware.presets import profile_preset

_CARD_LINE = re.compile(r"^\s*(\d+)\s+\[(\S+)\s*\]:\s+(\S+)\s+-\s+(.*)$")
RESPEAKER_USB = ("2886", "0018")
SPEAKERPHONE_VENDORS = {"0b0e": "Jabra", "047f": "Poly"}


@dataclass(frozen=True, slots=True)
class SoundCard:
    index: int
    id: str
    driver: str
    name: str
    usb_id: tuple[str, str] | None = None
    capture: bool = False
    playback: bool = False


@dataclass(frozen=True, slots=True)
class UsbDevice:
    vendor: str
    product: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class Hardware:
    cards: tuple[SoundCard, ...]
    usb: tuple[UsbDevice, ...] = ()


@dataclass(frozen=True, slots=True)
class Profile:
    """A supported board or array; ``geometry`` names its mics' ``[array] geometry`` preset
    ("" when it has no array edgevoice can steer)."""

    name: str
    title: str
    geometry: str = ""


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("respeaker-2mic", "Seeed ReSpeaker 2-Mics Pi HAT", "respeaker-2mic"),
    Profile("respeaker-4mic", "Seeed ReSpeaker 4-Mic Array for Raspberry Pi (output: headphone jack)",
            "respeaker-4mic"),
    Profile("respeaker-usb-v2", "Seeed ReSpeaker USB Mic Array v2.0 (6-channel firmware)",
            "respeaker-usb-v2"),
    Profile("usb-speakerphone", "USB speakerphone"),
    Profile("usb-mic-headphones", "USB microphone, output on the Pi's headphone jack"),
    Profile("usb-mic-hdmi", "USB microphone, output on HDMI"),
)}


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A profile that fits, why, and the keys to set on top of its preset for this exact box."""

    profile: Profile
    reason: str
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)

    def preset_path(self) -> Path | None:
        """The shipped preset as a file path (package data), or None when none ships."""
        preset = profile_preset(self.profile.name)
        return Path(str(preset)) if preset is not None else None

    def array_in_preset(self) -> bool:
        """Whether the shipped preset hears the mics as an array (its ``[array] geometry``)."""
        preset = profile_preset(self.profile.name)
        if preset is None:
            return False
        fragment = tomllib.loads(preset.read_text(encoding="utf-8"))
        return bool(fragment.get("array", {}).get("geometry"))

    def as_dict(self) -> dict[str, Any]:
        preset = self.preset_path()
        return {"profile": self.profile.name, "title": self.profile.title, "reason": self.reason,
                "preset": str(preset) if preset else None, "overrides": self.overrides,
                "geometry": self.profile.geometry or None, "array_in_preset": self.array_in_preset()}


def parse_cards(text: str) -> list[tuple[int, str, str, str]]:
    """``/proc/asound/cards`` → (index, id, driver, name) per card."""
    cards = []
    for line in text.splitlines():
        match = _CARD_LINE.match(line)
        if match:
            cards.append((int(match[1]), match[2], match[3], match[4].strip()))
    return cards


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def read_hardware(root: Path = Path("/")) -> Hardware:
    asound = root / "proc/asound"
    cards: list[SoundCard] = []
    for index, card_id, driver, name in parse_cards(_read(asound / "cards") or ""):
        card_dir = asound / f"card{index}"
        usbid = (_read(card_dir / "usbid") or "").strip().lower()
        vendor, sep, product = usbid.partition(":")
        entries = [p.name for p in card_dir.glob("pcm*")] if card_dir.is_dir() else []
        cards.append(SoundCard(
            index, card_id, driver, name, (vendor, product) if sep else None,
            capture=any(e.endswith("c") for e in entries), playback=any(e.endswith("p") for e in entries)))
    usb: list[UsbDevice] = []
    for device in sorted((root / "sys/bus/usb/devices").glob("*")):
        vendor = (_read(device / "idVendor") or "").strip().lower()
        product = (_read(device / "idProduct") or "").strip().lower()
        if vendor and product:
            usb.append(UsbDevice(vendor, product, (_read(device / "product") or "").strip()))
    return Hardware(tuple(cards), tuple(usb))


def _is_usb(card: SoundCard) -> bool:
    return card.usb_id is not None or card.driver.lower().startswith("usb-audio")


def _usb_device_pcm(card: SoundCard) -> str:
    return f"plughw:CARD={card.id},DEV=0"


def suggest(hardware: Hardware) -> list[Suggestion]:
    """Profiles that fit the hardware, best first (most specific hardware first)."""
    out: list[Suggestion] = []
    cards = hardware.cards
    usb_ids = {(d.vendor, d.product) for d in hardware.usb}
    by_id = {c.id.lower(): c for c in cards}

    respeaker_usb = next((c for c in cards if c.usb_id == RESPEAKER_USB or c.id == "ArrayUAC10"), None)
    if respeaker_usb is not None or RESPEAKER_USB in usb_ids:
        why = (f"card {respeaker_usb.index} [{respeaker_usb.id}]" if respeaker_usb else "USB device")
        out.append(Suggestion(PROFILES["respeaker-usb-v2"], f"{why} is USB 2886:0018"))
    for card in cards:
        lowered = f"{card.id} {card.driver} {card.name}".lower()
        if "seeed4mic" in lowered or "ac108" in lowered:
            overrides = {} if "headphones" in by_id else (
                {"audio": {"playback_device": "ev_hdmi_out", "playback_rate": 48000}}
                if "vc4hdmi0" in by_id else {})
            out.append(Suggestion(PROFILES["respeaker-4mic"],
                                  f"card {card.index} [{card.id}] is the AC108 4-mic HAT", overrides))
        elif "seeed2mic" in lowered or "wm8960" in lowered:
            out.append(Suggestion(PROFILES["respeaker-2mic"],
                                  f"card {card.index} [{card.id}] is the WM8960 2-mic HAT"))
    for card in cards:
        if not _is_usb(card) or card is respeaker_usb or not card.capture:
            continue
        vendor = card.usb_id[0] if card.usb_id else ""
        named = card.id.lower() in ("speakerphone",) or any(
            word in card.name.lower() for word in ("speak", "speakerphone", "conference", "powerconf"))
        if card.playback and (vendor in SPEAKERPHONE_VENDORS or named):
            brand = SPEAKERPHONE_VENDORS.get(vendor, card.name)
            overrides = {} if card.id == "speakerphone" else {"audio": {
                "capture_device": _usb_device_pcm(card), "playback_device": _usb_device_pcm(card)}}
            out.append(Suggestion(PROFILES["usb-speakerphone"],
                                  f"card {card.index} [{card.id}] is a {brand} speakerphone", overrides))
            continue
        capture = {} if card.id == "usbmic" else {"capture_device": _usb_device_pcm(card)}
        if "headphones" in by_id:
            out.append(Suggestion(PROFILES["usb-mic-headphones"],
                                  f"card {card.index} [{card.id}] is a USB microphone; "
                                  f"card {by_id['headphones'].index} is the headphone jack",
                                  {"audio": capture} if capture else {}))
        if "vc4hdmi0" in by_id:
            out.append(Suggestion(PROFILES["usb-mic-hdmi"],
                                  f"card {card.index} [{card.id}] is a USB microphone; "
                                  f"card {by_id['vc4hdmi0'].index} is HDMI 0",
                                  {"audio": capture} if capture else {}))
    return out
