"""The root of every error edgevoice raises on purpose.

Each subclass carries a stable ``code`` (telemetry, MQTT command answers and
``error`` events use it) and a message that tells the user what to do. Errors
that stand for a builtin failure also inherit that builtin, the way gpiozero's
``BadPinFactory(GPIOZeroError, ImportError)`` does, so generic handlers still
catch them.
"""

from __future__ import annotations


class EdgeVoiceError(Exception):
    """Base class; ``code`` is stable across releases, the message is for people."""

    code: str = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def as_dict(self) -> dict[str, str]:
        """The ``{code, message}`` shape used by events, JSON output and MQTT answers."""
        return {"code": self.code, "message": self.message}


class MissingDependencyError(EdgeVoiceError, ImportError):
    """An optional engine is not installed; the message names the extra to install."""

    code = "missing_dependency"


def require(module: str, extra: str, purpose: str) -> object:
    """Import an optional heavy module lazily, or say exactly what to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(
            f"{purpose} needs the Python module {module!r}, which is not installed. "
            f"Install it with: pip install 'edgevoice[{extra}]'"
        ) from err
