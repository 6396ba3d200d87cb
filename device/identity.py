"""The device's identity: one stable ``device_id`` per board.

Where it comes from, first match wins:

1. ``[device] id`` in the config (an operator's explicit choice; never persisted).
2. ``<state_dir>/identity.json``, written the first time an identity was derived, so
   the id survives a board swap or a regenerated machine-id until someone deletes it.
3. The board's serial number: ``/sys/firmware/devicetree/base/serial-number``, else
   the ``Serial`` line of ``/proc/cpuinfo`` (Raspberry Pi) → ``ev-<serial hex>``.
4. ``/etc/machine-id``, hashed with an application salt (machine-id is meant to stay
   private, see machine-id(5)) → ``ev-<12 hex>``.

The id is used as the MQTT client id and in topics, so it is checked to be topic-safe
(letters, digits, ``-``, ``_``, ``.``). Every path takes a ``root`` prefix, so tests and
the image build work on scratch trees.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from edgevoice.device.config.schema import DeviceConfig
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)

IDENTITY_FILE = "identity.json"
DT_SERIAL = "sys/firmware/devicetree/base/serial-number"
CPUINFO = "proc/cpuinfo"
MACHINE_ID = "etc/machine-id"
_VALID_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_HEX = re.compile(r"^[0-9a-f]+$")
_MACHINE_ID_SALT = b"edgevoice-device-id:"


class IdentitySource(StrEnum):
    CONFIG = "config"
    SERIAL = "serial"
    MACHINE_ID = "machine_id"


class IdentityError(EdgeVoiceError):
    """No identity could be found, or the one found is not usable."""

    code = "identity_invalid"


@dataclass(frozen=True, slots=True)
class Identity:
    """Who this device is. ``persisted`` says whether it was read from identity.json."""

    device_id: str
    source: IdentitySource
    created: str = ""
    persisted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"device_id": self.device_id, "source": str(self.source), "created": self.created}


def under(root: Path, path: str | Path) -> Path:
    """``/var/lib/x`` under ``root`` (absolute paths are re-rooted, not escaped)."""
    return root / str(path).lstrip("/")


def state_dir(device_config: DeviceConfig, root: Path = Path("/")) -> Path:
    return under(root, device_config.state_dir)


def identity_path(device_config: DeviceConfig, root: Path = Path("/")) -> Path:
    return state_dir(device_config, root) / IDENTITY_FILE


def validate_device_id(device_id: str, where: str) -> str:
    if not _VALID_ID.match(device_id):
        raise IdentityError(
            f"{where}: device id {device_id!r} is not usable as an MQTT client id and topic "
            "level; use 1-64 letters, digits, '-', '_' or '.', starting with a letter or digit"
        )
    return device_id


def _read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("ascii", "replace")
    except OSError:
        return None


def board_serial(root: Path = Path("/")) -> str | None:
    """The board's serial number in lower-case hex, without leading zeros, or None."""
    candidates: list[str] = []
    text = _read_text(under(root, DT_SERIAL))
    if text is not None:
        candidates.append(text.replace("\x00", "").strip())
    cpuinfo = _read_text(under(root, CPUINFO))
    if cpuinfo is not None:
        for line in cpuinfo.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == "Serial":
                candidates.append(value.strip())
    for candidate in candidates:
        serial = candidate.lower().lstrip("0")
        if serial and _HEX.match(serial) and len(serial) >= 6:
            return serial
    return None


def machine_id(root: Path = Path("/")) -> str | None:
    text = _read_text(under(root, MACHINE_ID))
    if text is None:
        return None
    value = text.strip().lower()
    return value if len(value) == 32 and _HEX.match(value) else None


def derive_identity(root: Path = Path("/")) -> Identity:
    """The identity this hardware would get now (nothing read from or written to disk state)."""
    now = datetime.now(UTC).replace(microsecond=0).isoformat()
    serial = board_serial(root)
    if serial is not None:
        return Identity(f"ev-{serial[-16:]}", IdentitySource.SERIAL, now)
    mid = machine_id(root)
    if mid is not None:
        digest = hashlib.sha256(_MACHINE_ID_SALT + mid.encode()).hexdigest()[:12]
        return Identity(f"ev-{digest}", IdentitySource.MACHINE_ID, now)
    raise IdentityError(
        f"no board serial number ({under(root, DT_SERIAL)}, the Serial line of "
        f"{under(root, CPUINFO)}) and no {under(root, MACHINE_ID)}: set [device] id in the "
        "config, or run 'systemd-machine-id-setup'"
    )


def read_identity(path: Path) -> Identity | None:
    """The persisted identity, or None when there is none; a damaged file is an error."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise IdentityError(
            f"{path}: cannot read the device identity ({err}); delete the file to derive it again"
        ) from err
    if not isinstance(data, dict) or not isinstance(data.get("device_id"), str):
        raise IdentityError(f"{path}: no device_id; delete the file to derive it again")
    try:
        source = IdentitySource(data.get("source", IdentitySource.MACHINE_ID))
    except ValueError:
        source = IdentitySource.MACHINE_ID
    device_id = validate_device_id(data["device_id"], str(path))
    return Identity(device_id, source, str(data.get("created", "")), persisted=True)


def write_identity(path: Path, identity: Identity) -> None:
    """Write identity.json atomically (temp file, fsync, rename), mode 0644."""
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = json.dumps(identity.as_dict(), indent=2, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(blob)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def ensure_identity(device_config: DeviceConfig, root: Path = Path("/")) -> tuple[Identity, bool]:
    """The persisted identity, creating identity.json when missing. Returns (identity, created).

    Unlike :func:`load_identity` this never falls back: a failure to write is an error.
    Provisioning and the image build call it.
    """
    path = identity_path(device_config, root)
    existing = read_identity(path)
    if existing is not None:
        return existing, False
    derived = derive_identity(root)
    try:
        write_identity(path, derived)
    except OSError as err:
        raise IdentityError(f"cannot write {path}: {err.strerror or err}") from err
    _LOGGER.info("device identity %s created from the %s", derived.device_id, derived.source)
    return Identity(derived.device_id, derived.source, derived.created, persisted=True), True


def load_identity(device_config: DeviceConfig, root: Path = Path("/")) -> Identity:
    """Who this device is (see the module docstring for the order).

    The derived identity is persisted when the state directory is writable; when it is
    not (a developer's machine without /var/lib/edgevoice) the derived id is still
    returned: it is stable because it is derived from the same hardware every time.
    """
    if device_config.id:
        return Identity(validate_device_id(device_config.id, "[device] id"), IdentitySource.CONFIG)
    path = identity_path(device_config, root)
    existing = read_identity(path)
    if existing is not None:
        return existing
    derived = derive_identity(root)
    try:
        write_identity(path, derived)
    except OSError as err:
        _LOGGER.debug("identity not persisted to %s: %s", path, err)
        return derived
    return Identity(derived.device_id, derived.source, derived.created, persisted=True)
