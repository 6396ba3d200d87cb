"""Remote diagnostics as fleet commands: ``doctor``, ``aec_selftest`` and ``logs``.

They answer with the same JSON as the command line (``edgevoice doctor --json``,
``edgevoice aec-selftest --json``); ``logs`` returns the last lines of the daemon's
log, secrets already scrubbed (:class:`edgevoice.device.system.logs.RecentLogHandler`).
The runtime implements :class:`DiagnosticsTarget` beside
:class:`~edgevoice.device.control.DeviceControl`; a target without it answers
``unsupported_command``. Importing this module registers the commands.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from edgevoice.device.doctor import CHECKS
from edgevoice.device.mqtt.commands import Arg, CommandError, ErrorCode, register_command
from edgevoice.errors import EdgeVoiceError

MAX_LOG_LINES = 1000
DEFAULT_LOG_LINES = 100


class UnsupportedCommandError(EdgeVoiceError):
    code = "unsupported_command"


class BusyError(EdgeVoiceError):
    """The device is in a turn (or speaking) and the command needs it idle."""

    code = "busy"


@runtime_checkable
class DiagnosticsTarget(Protocol):
    async def doctor(self, only: tuple[str, ...]) -> dict[str, Any]:
        """``{"ok", "checks": [...]}`` as ``edgevoice doctor --json`` prints it."""
        ...

    async def aec_selftest(self) -> dict[str, Any]:
        """The self-test's result as ``edgevoice aec-selftest --json`` prints it; raise
        :class:`BusyError` unless the device is idle."""
        ...

    async def logs(self, lines: int) -> dict[str, Any]:
        """``{"lines": [...]}``: the last ``lines`` lines of the log, scrubbed."""
        ...


def _diagnostics(target: Any, command: str) -> DiagnosticsTarget:
    if not isinstance(target, DiagnosticsTarget):
        raise UnsupportedCommandError(f"this device does not run {command}; update edgevoice on it")
    return target


def parse_checks(only: str | None) -> tuple[str, ...]:
    """``"audio, mqtt"`` → ("audio", "mqtt"); all checks when empty or missing."""
    if only is None:
        return CHECKS
    names = tuple(name.strip() for name in only.split(",") if name.strip())
    unknown = [name for name in names if name not in CHECKS]
    if unknown or not names:
        raise CommandError(
            ErrorCode.INVALID_ARGUMENT,
            f"argument 'only' names unknown check(s) {', '.join(unknown) or '(none)'}; "
            f"known: {', '.join(CHECKS)}",
        )
    return names


async def _doctor(target: Any, args: dict[str, Any]) -> Any:
    checks = parse_checks(args.get("only"))
    return await _diagnostics(target, "doctor").doctor(checks)


async def _aec_selftest(target: Any, args: dict[str, Any]) -> Any:
    return await _diagnostics(target, "aec_selftest").aec_selftest()


async def _logs(target: Any, args: dict[str, Any]) -> Any:
    return await _diagnostics(target, "logs").logs(int(args.get("lines", DEFAULT_LOG_LINES)))


register_command("doctor", {"only": Arg(str, required=False)}, _doctor)
register_command("aec_selftest", {}, _aec_selftest)
register_command("logs", {"lines": Arg(int, required=False, minimum=1, maximum=MAX_LOG_LINES)}, _logs)
