"""The console's two tokens: full access, and read-only captions for a kiosk screen.

Each is a random URL-safe string in its own file under the state directory (mode 0600),
made the first time the console starts (or ``edgevoice console token`` runs) and kept
from then on. Tokens never leave the device in a page: a browser trades one for an
HttpOnly session cookie at ``/login``.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from edgevoice.device.config.schema import ConsoleConfig
from edgevoice.device.console.errors import ConsoleError

_LOGGER = logging.getLogger(__name__)

TOKEN_BYTES = 32  # 43 URL-safe characters


@dataclass(frozen=True, slots=True)
class ConsoleTokens:
    full: str
    captions: str

    def role_of(self, presented: str) -> str | None:
        """``"full"``, ``"captions"`` or None, compared in constant time."""
        given = presented.strip().encode()
        if not given:
            return None
        if hmac.compare_digest(given, self.full.encode()):
            return "full"
        if hmac.compare_digest(given, self.captions.encode()):
            return "captions"
        return None


def token_path(state_dir: Path, name: str) -> Path:
    path = Path(name)
    return path if path.is_absolute() else state_dir / path


def read_or_create(path: Path) -> str:
    """The token in ``path``; a new one is written (0600, atomically) when there is none."""
    try:
        existing = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        existing = ""
    except PermissionError as err:
        raise ConsoleError(
            f"cannot read the console token {path}: {err}; run this as the daemon's user "
            "(sudo -u edgevoice) or with sudo"
        ) from err
    except OSError as err:
        raise ConsoleError(
            f"cannot read the console token {path}: {err}; check [device] state_dir is writable"
        ) from err
    if existing:
        return existing
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
        if os.geteuid() == 0:
            # Made by root (`sudo edgevoice console token`): the daemon's user, who owns
            # the state directory, must still be able to read it.
            owner = path.parent.stat()
            os.chown(temp, owner.st_uid, owner.st_gid)
        os.replace(temp, path)
    except OSError as err:
        raise ConsoleError(
            f"cannot write the console token {path}: {err}; check [device] state_dir is writable"
        ) from err
    _LOGGER.info("console: new token written to %s", path)
    return token


def load_tokens(config: ConsoleConfig, state_dir: Path) -> ConsoleTokens:
    return ConsoleTokens(
        full=read_or_create(token_path(state_dir, config.token_file)),
        captions=read_or_create(token_path(state_dir, config.captions_token_file)),
    )
