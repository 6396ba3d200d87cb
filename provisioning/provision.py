"""Plan and apply a boot config: check everything first, then write atomically.

:func:`plan` reads the boot file and the target root and computes every file's full new
content (the device config is merged over the existing one and validated with the
device's own schema). Only when nothing is wrong does :func:`provision` write: each file
atomically, files already right are not touched, the identity is created, and the boot
file is replaced by ``edgevoice.toml.applied`` with every secret removed.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from edgevoice.device.config import ConfigError, ConfigProblem, build_config, merge, to_toml
from edgevoice.device.config.fields import check_of
from edgevoice.device.config.loader import read_toml
from edgevoice.device.config.schema import Config, DeviceConfig, MqttConfig
from edgevoice.device.identity import (
    Identity,
    IdentityError,
    IdentitySource,
    derive_identity,
    ensure_identity,
    identity_path,
    read_identity,
    state_dir,
)
from edgevoice.errors import EdgeVoiceError
from edgevoice.provisioning.bootfile import BOOT_SECRETS, BootConfig, BootConfigError, parse_boot_config
from edgevoice.provisioning.files import (
    ChangeStatus,
    FileChange,
    apply_change,
    atomic_write,
    find_user,
    status_of,
)
from edgevoice.provisioning.render import NM_KEYFILE, hosts_file, nm_keyfile, regdomain_modprobe

_LOGGER = logging.getLogger(__name__)

SERVICE_USER = "edgevoice"
CONFIG_PATH = "/etc/edgevoice/config.toml"
MQTT_CA_PATH = "/etc/edgevoice/mqtt-ca.pem"
REGDOMAIN_PATH = "/etc/modprobe.d/edgevoice-wifi-country.conf"
RFKILL_STATE_DIR = "var/lib/systemd/rfkill"
# The device config's key for the broker's CA file, whichever name the MQTT section uses.
_MQTT_CA_KEYS = ("ca_file", "ca_cert", "ca_certs", "tls_ca_file", "tls_ca")
APPLIED_SUFFIX = ".applied"


@dataclass(frozen=True, slots=True)
class Plan:
    boot: BootConfig
    config: Config
    changes: tuple[FileChange, ...]
    statuses: tuple[ChangeStatus, ...]


@dataclass(frozen=True, slots=True)
class ChangeReport:
    what: str
    path: str
    status: str


@dataclass(frozen=True, slots=True)
class ProvisionReport:
    boot_config: str
    dry_run: bool
    changes: tuple[ChangeReport, ...]
    identity: Identity | None
    identity_status: str
    boot_record: str | None
    live: tuple[str, ...] = field(default_factory=tuple)

    @property
    def changed(self) -> bool:
        return any(c.status != ChangeStatus.UNCHANGED for c in self.changes) or (
            self.identity_status == ChangeStatus.CREATED)

    def as_dict(self) -> dict[str, Any]:
        return {
            "boot_config": self.boot_config,
            "dry_run": self.dry_run,
            "changed": self.changed,
            "changes": [dataclasses.asdict(c) for c in self.changes],
            "identity": self.identity.as_dict() if self.identity else None,
            "identity_status": self.identity_status,
            "boot_record": self.boot_record,
            "live": list(self.live),
        }


def mqtt_ca_key() -> str | None:
    names = {f.name for f in dataclasses.fields(MqttConfig)}
    return next((key for key in _MQTT_CA_KEYS if key in names), None)


def secret_keys() -> set[tuple[str, str]]:
    """(section, key) of every secret: the boot file's own and the device schema's."""
    found = set(BOOT_SECRETS)
    for section in dataclasses.fields(Config):
        cls = section.default_factory if section.default_factory is not dataclasses.MISSING else None
        if cls is None or not dataclasses.is_dataclass(cls):
            continue
        for key in dataclasses.fields(cls):
            check = check_of(key)
            if check is not None and check.secret:
                found.add((section.name, key.name))
    return found


def _under(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def _device_config_changes(boot: BootConfig, root: Path) -> tuple[Config, list[FileChange]]:
    device_raw: dict[str, Any] = {k: dict(v) if isinstance(v, Mapping) else v
                                  for k, v in boot.device_config.items()}
    problems: list[ConfigProblem] = []
    if boot.mqtt_ca_pem is not None:
        key = mqtt_ca_key()
        if key is None:
            problems.append(ConfigProblem(str(boot.path), "mqtt.ca_cert",
                                          "this edgevoice's [mqtt] section has no CA file setting"))
        else:
            device_raw.setdefault("mqtt", {})[key] = MQTT_CA_PATH
    existing_path = _under(root, CONFIG_PATH)
    existing: dict[str, Any] = {}
    if existing_path.exists():
        try:
            existing = read_toml(existing_path)
        except ConfigError as err:
            problems.extend(err.problems)
    layers: list[tuple[str, Mapping[str, Any]]] = [(str(existing_path), existing),
                                                   (str(boot.path), device_raw)]
    try:
        config = build_config(layers)
    except ConfigError as err:
        problems.extend(err.problems)
        config = Config()
    if problems:
        raise BootConfigError(problems)
    merged = merge(existing, device_raw)
    changes: list[FileChange] = []
    owner = find_user(root, SERVICE_USER)
    if merged != existing or not existing_path.exists():
        content = ("# edgevoice configuration (written by edgevoice provision; "
                   "see docs/config.md)\n" + to_toml(merged)) if merged else "# edgevoice configuration\n"
        changes.append(FileChange("config", CONFIG_PATH, content.encode(), 0o600, owner))
    else:
        # Already what the boot file asks for: make sure mode and owner are right, keep the bytes.
        changes.append(FileChange("config", CONFIG_PATH, existing_path.read_bytes(), 0o600, owner))
    if boot.mqtt_ca_pem is not None:
        pem = boot.mqtt_ca_pem if boot.mqtt_ca_pem.endswith("\n") else boot.mqtt_ca_pem + "\n"
        changes.append(FileChange("mqtt-ca", MQTT_CA_PATH, pem.encode(), 0o644))
    return config, changes


def plan(boot_path: Path, root: Path = Path("/")) -> Plan:
    """Everything provisioning would write, checked; raises :class:`BootConfigError`."""
    boot = parse_boot_config(boot_path, root)
    config, changes = _device_config_changes(boot, root)
    if boot.wifi is not None:
        changes.append(FileChange("wifi", NM_KEYFILE, nm_keyfile(boot.wifi).encode(), 0o600))
        changes.append(FileChange("wifi-country", REGDOMAIN_PATH,
                                  regdomain_modprobe(boot.wifi.country).encode(), 0o644))
        rfkill = _under(root, RFKILL_STATE_DIR)
        if rfkill.is_dir():
            # Raspberry Pi OS keeps Wi-Fi soft-blocked until a country is set.
            for state in sorted(rfkill.glob("*:wlan")):
                changes.append(FileChange("wifi-unblock", f"/{RFKILL_STATE_DIR}/{state.name}",
                                          b"0\n", 0o644))
    if boot.hostname is not None:
        changes.append(FileChange("hostname", "/etc/hostname", f"{boot.hostname}\n".encode(), 0o644))
        hosts = _under(root, "/etc/hosts")
        current = hosts.read_text() if hosts.is_file() else ""
        changes.append(FileChange("hosts", "/etc/hosts", hosts_file(current, boot.hostname).encode(), 0o644))
    if boot.timezone is not None:
        changes.append(FileChange("timezone", "/etc/localtime",
                                  symlink=f"/usr/share/zoneinfo/{boot.timezone}"))
        changes.append(FileChange("timezone", "/etc/timezone", f"{boot.timezone}\n".encode(), 0o644))
    device = config.device
    if not device.id:
        try:
            if read_identity(identity_path(device, root)) is None:
                derive_identity(root)
        except IdentityError as err:
            raise BootConfigError([ConfigProblem(str(boot_path), "device.id", err.message)]) from err
    statuses = tuple(status_of(change, root) for change in changes)
    return Plan(boot, config, tuple(changes), statuses)


def scrubbed_record(boot: BootConfig) -> str:
    """The boot file without its secrets, with a header saying what was removed and when."""
    secrets = secret_keys()
    removed: list[str] = []
    clean: dict[str, Any] = {}
    for section, table in boot.raw.items():
        if not isinstance(table, Mapping):
            clean[section] = table
            continue
        kept = {}
        for key, value in table.items():
            if (section, key) in secrets:
                removed.append(f"{section}.{key}")
            else:
                kept[key] = value
        clean[section] = kept
    when = datetime.now(UTC).replace(microsecond=0).isoformat()
    header = [f"# Applied by edgevoice provision at {when}.",
              "# A record only: it is not applied again. Secrets were removed from the boot",
              f"# partition: {', '.join(removed) or 'none'}.",
              "# To provision again, write a new edgevoice.toml.", ""]
    return "\n".join(header) + (to_toml(clean) if clean else "")


def _scrub_boot_file(boot: BootConfig) -> Path:
    record = boot.path.with_name(boot.path.name + APPLIED_SUFFIX)
    atomic_write(record, scrubbed_record(boot).encode(), 0o600)
    boot.path.unlink()
    fd = os.open(boot.path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return record


def _live_actions(plan_: Plan) -> list[str]:
    """On the running system (root "/"), make the new settings take effect now."""
    done: list[str] = []
    boot = plan_.boot
    if boot.hostname is not None and socket.gethostname() != boot.hostname:
        try:
            socket.sethostname(boot.hostname)
            done.append(f"hostname set to {boot.hostname}")
        except OSError as err:
            _LOGGER.warning("could not set the hostname now (%s); it applies at the next boot", err)
    if boot.wifi is not None:
        for argv in (["iw", "reg", "set", boot.wifi.country], ["rfkill", "unblock", "wifi"]):
            if shutil.which(argv[0]) is None:
                continue
            result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=10)
            if result.returncode == 0:
                done.append(" ".join(argv))
            else:
                _LOGGER.warning("%s failed: %s", " ".join(argv), result.stderr.strip())
    return done


def _console_tokens(config: Config, root: Path) -> None:
    """The console's tokens, made now so a kiosk screen can log in at the first boot (the
    daemon makes them at its first start otherwise)."""
    from edgevoice.device.console.tokens import load_tokens

    try:
        load_tokens(config.console, state_dir(config.device, root))
    except EdgeVoiceError as err:
        _LOGGER.warning("console tokens not made now (%s); the daemon makes them at its first start",
                        err.message)


def provision(boot_path: Path, root: Path = Path("/"), *, dry_run: bool = False) -> ProvisionReport:
    """Check the boot file, then apply it under ``root`` (see the module docstring)."""
    plan_ = plan(boot_path, root)
    device: DeviceConfig = plan_.config.device
    if dry_run:
        if device.id:
            existing: Identity | None = Identity(device.id, IdentitySource.CONFIG)
        else:
            existing = read_identity(identity_path(device, root)) or derive_identity(root)
        id_status = ChangeStatus.UNCHANGED if existing is not None and (
            existing.persisted or device.id) else ChangeStatus.CREATED
        changes = tuple(ChangeReport(c.what, c.path, f"would be {s}" if s != ChangeStatus.UNCHANGED else s)
                        for c, s in zip(plan_.changes, plan_.statuses, strict=True))
        return ProvisionReport(str(boot_path), True, changes, existing, str(id_status), None)
    reports = []
    for change in plan_.changes:
        status = apply_change(change, root)
        _LOGGER.info("%s %s: %s", change.what, change.path, status)
        reports.append(ChangeReport(change.what, change.path, str(status)))
    if device.id:
        identity, created = Identity(device.id, IdentitySource.CONFIG), False
    else:
        identity, created = ensure_identity(device, root)
    if plan_.config.console.enabled:
        _console_tokens(plan_.config, root)
    record = _scrub_boot_file(plan_.boot)
    live = _live_actions(plan_) if root.resolve() == Path("/") else []
    return ProvisionReport(str(boot_path), False, tuple(reports), identity,
                           str(ChangeStatus.CREATED if created else ChangeStatus.UNCHANGED),
                           str(record), tuple(live))
