"""How a config key is declared: a default, a docstring, and its checks.

Every key of every section is declared with :func:`setting`, so the loader, the
redaction in ``config show`` and the reference in ``docs/config.md`` all read
the same declaration.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Check:
    """Constraints on one key, checked at load time."""

    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None
    secret: bool = False
    # The key only takes effect when the daemon restarts (not on SIGHUP/set_config).
    restart: bool = False


def setting(
    default: Any,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[Any, ...] | None = None,
    secret: bool = False,
    restart: bool = False,
) -> Any:
    """Declare a config key: ``port: int = setting(1883, "Broker port.", minimum=1)``."""
    check = Check(doc, minimum, maximum, choices, secret, restart)
    return dataclasses.field(default=default, metadata={"check": check})


def section(cls: type[Any], doc: str | None = None) -> Any:
    """Declare a nested section; its docstring documents it."""
    return dataclasses.field(default_factory=cls, metadata={"section": True})


def check_of(field: dataclasses.Field[Any]) -> Check | None:
    check = field.metadata.get("check")
    return check if isinstance(check, Check) else None
