"""The boot-partition file ``edgevoice.toml``: read it and check every key.

Format (all sections optional)::

    [system]
    hostname = "kitchen-voice"      # RFC 1123 label
    timezone = "Europe/Berlin"      # IANA zone name

    [wifi]
    ssid = "Home"
    passphrase = "correct horse"    # 8-63 characters or 64 hex digits; omit for an open network
    country = "DE"                  # ISO 3166 alpha-2: the regulatory domain
    hidden = false

    [mqtt]                          # the device's own [mqtt] keys, plus:
    ca_cert = "-----BEGIN CERTIFICATE-----..."   # the broker's CA, inline PEM, or
    ca_cert_file = "mqtt-ca.pem"    # a file beside edgevoice.toml

    [device] / [llm] / [agent] / ...  # any section of the device config, as in config.toml

Every section other than ``[system]`` and ``[wifi]`` is device configuration: it is merged
over ``/etc/edgevoice/config.toml`` and validated with the device's own schema by the
planner. This module checks the rest and collects every problem before reporting.
"""

from __future__ import annotations

import re
import ssl
import tomllib
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgevoice.device.config import ConfigError, ConfigProblem, build_config

_HOSTNAME = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
SYSTEM_KEYS = {"hostname", "timezone"}
WIFI_KEYS = {"ssid", "passphrase", "country", "hidden"}
BOOT_MQTT_KEYS = {"ca_cert", "ca_cert_file"}
# Keys that must not stay on the FAT boot partition once applied. Device-config secrets are
# found through the schema (``secret=True``); these are the boot file's own.
BOOT_SECRETS = {("wifi", "passphrase")}


class BootConfigError(ConfigError):
    """The boot file is invalid; nothing was applied."""

    code = "boot_config_invalid"


@dataclass(frozen=True, slots=True)
class WifiSettings:
    ssid: str
    passphrase: str  # empty: an open network
    country: str
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class BootConfig:
    """What the boot file asks for. ``device_config`` is the raw device-config sections."""

    path: Path
    raw: Mapping[str, Any]
    hostname: str | None = None
    timezone: str | None = None
    wifi: WifiSettings | None = None
    wifi_country: str | None = None
    mqtt_ca_pem: str | None = None
    device_config: Mapping[str, Any] = field(default_factory=dict)


def _country_codes() -> set[str] | None:
    """ISO 3166 codes from tzdata's table, when the host has it (it does on Debian)."""
    table = Path("/usr/share/zoneinfo/iso3166.tab")
    try:
        lines = table.read_text().splitlines()
    except OSError:
        return None
    return {line.split("\t", 1)[0] for line in lines if line and not line.startswith("#")} | {"00"}


def _known_timezone(name: str, root: Path) -> bool:
    if (root / "usr/share/zoneinfo" / name).is_file():
        return True
    try:
        return name in zoneinfo.available_timezones()
    except (OSError, ValueError):  # pragma: no cover - no tzdata at all
        return False


def check_pem(pem: str) -> str | None:
    """None when ``pem`` holds at least one loadable X.509 certificate, else what is wrong."""
    if "-----BEGIN CERTIFICATE-----" not in pem:
        return "expected a PEM certificate (-----BEGIN CERTIFICATE-----)"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cadata=pem)
    except (ssl.SSLError, ValueError) as err:
        return f"not a valid certificate: {err}"
    return None


def _string(table: Mapping[str, Any], key: str, where: str, source: str,
            problems: list[ConfigProblem]) -> str | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, str):
        problems.append(ConfigProblem(source, f"{where}.{key}", f"expected a string, found {value!r}"))
        return None
    return value


def _check_wifi(table: Mapping[str, Any], source: str, problems: list[ConfigProblem]) -> WifiSettings | None:
    for key in table:
        if key not in WIFI_KEYS:
            problems.append(ConfigProblem(source, f"wifi.{key}",
                                          f"unknown key (known: {', '.join(sorted(WIFI_KEYS))})"))
    ssid = _string(table, "ssid", "wifi", source, problems)
    passphrase = _string(table, "passphrase", "wifi", source, problems) or ""
    country = _string(table, "country", "wifi", source, problems)
    hidden = table.get("hidden", False)
    if not isinstance(hidden, bool):
        problems.append(ConfigProblem(source, "wifi.hidden", f"expected true or false, found {hidden!r}"))
        hidden = False
    ok = True
    if ssid is None or not ssid:
        if "ssid" not in table or ssid == "":
            problems.append(ConfigProblem(source, "wifi.ssid", "missing: the network name to join"))
        ok = False
    elif len(ssid.encode()) > 32:
        problems.append(ConfigProblem(source, "wifi.ssid", "longer than 32 bytes"))
        ok = False
    if passphrase and not (_HEX64.match(passphrase) or (
            8 <= len(passphrase) <= 63 and all(32 <= ord(c) < 127 for c in passphrase))):
        problems.append(ConfigProblem(
            source, "wifi.passphrase",
            f"expected 8-63 printable ASCII characters or 64 hex digits, found {len(passphrase)} "
            "characters (the value is not shown)"))
        ok = False
    if country is None:
        if "country" not in table:
            problems.append(ConfigProblem(source, "wifi.country",
                                          "missing: the two-letter country code (e.g. GB, DE, US); "
                                          "Wi-Fi stays blocked without it"))
        ok = False
    elif not _COUNTRY.match(country):
        problems.append(ConfigProblem(
            source, "wifi.country", f"expected an upper-case ISO 3166 code like GB or DE, found {country!r}"))
        ok = False
    else:
        codes = _country_codes()
        if codes is not None and country not in codes:
            problems.append(ConfigProblem(source, "wifi.country", f"{country!r} is not an ISO 3166 country"))
            ok = False
    if not ok or ssid is None or country is None:
        return None
    return WifiSettings(ssid, passphrase, country, hidden)


def parse_boot_config(path: Path, root: Path = Path("/")) -> BootConfig:
    """Read and check the boot file; :class:`BootConfigError` lists every problem."""
    source = str(path)
    if path.name.endswith(".applied"):
        raise BootConfigError([ConfigProblem(
            source, "", "this is the record of an applied boot config (secrets removed); "
            "write a new edgevoice.toml to provision again")])
    try:
        with path.open("rb") as handle:
            raw = tomllib.load(handle)
    except tomllib.TOMLDecodeError as err:
        raise BootConfigError([ConfigProblem(source, "", f"not valid TOML: {err}")]) from err
    except OSError as err:
        raise BootConfigError([ConfigProblem(source, "", f"cannot read: {err.strerror or err}")]) from err

    problems: list[ConfigProblem] = []
    system = raw.get("system", {})
    if not isinstance(system, dict):
        problems.append(ConfigProblem(source, "system", "expected a table [system]"))
        system = {}
    for key in system:
        if key not in SYSTEM_KEYS:
            problems.append(ConfigProblem(source, f"system.{key}",
                                          f"unknown key (known: {', '.join(sorted(SYSTEM_KEYS))})"))
    hostname = _string(system, "hostname", "system", source, problems)
    if hostname is not None and not _HOSTNAME.match(hostname):
        problems.append(ConfigProblem(
            source, "system.hostname",
            f"expected 1-63 lower-case letters, digits or '-', not starting or ending with '-', "
            f"found {hostname!r}"))
        hostname = None
    timezone = _string(system, "timezone", "system", source, problems)
    if timezone is not None and (".." in timezone or timezone.startswith("/")
                                 or not _known_timezone(timezone, root)):
        problems.append(ConfigProblem(source, "system.timezone",
                                      f"unknown time zone {timezone!r} (expected e.g. Europe/London)"))
        timezone = None

    wifi: WifiSettings | None = None
    wifi_table = raw.get("wifi")
    if wifi_table is not None:
        if isinstance(wifi_table, dict):
            wifi = _check_wifi(wifi_table, source, problems)
        else:
            problems.append(ConfigProblem(source, "wifi", "expected a table [wifi]"))

    device_config: dict[str, Any] = {k: v for k, v in raw.items() if k not in ("system", "wifi")}
    ca_pem: str | None = None
    mqtt = device_config.get("mqtt")
    if isinstance(mqtt, dict):
        mqtt = dict(mqtt)
        inline = mqtt.pop("ca_cert", None)
        ca_file = mqtt.pop("ca_cert_file", None)
        device_config["mqtt"] = mqtt
        if inline is not None and ca_file is not None:
            problems.append(ConfigProblem(source, "mqtt.ca_cert_file",
                                          "give ca_cert or ca_cert_file, not both"))
        elif inline is not None:
            if not isinstance(inline, str):
                problems.append(ConfigProblem(source, "mqtt.ca_cert", "expected a PEM string"))
            else:
                ca_pem = inline
        elif ca_file is not None:
            if not isinstance(ca_file, str) or not ca_file:
                problems.append(ConfigProblem(source, "mqtt.ca_cert_file", "expected a file name"))
            else:
                ca_path = path.parent / ca_file
                try:
                    ca_pem = ca_path.read_text()
                except (OSError, UnicodeDecodeError) as err:
                    problems.append(ConfigProblem(source, "mqtt.ca_cert_file",
                                                  f"cannot read {ca_path}: {err}"))
        if ca_pem is not None:
            trouble = check_pem(ca_pem)
            if trouble is not None:
                problems.append(ConfigProblem(source, "mqtt.ca_cert", trouble))
                ca_pem = None
    try:
        # The device sections alone, so their problems are listed with the boot file's own.
        build_config([(source, device_config)])
    except ConfigError as err:
        problems.extend(err.problems)
    if problems:
        raise BootConfigError(problems)
    return BootConfig(path, raw, hostname, timezone, wifi, wifi.country if wifi else None, ca_pem,
                      device_config)
