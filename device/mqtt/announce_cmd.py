"""``announce`` and ``listen`` as fleet commands (to a device, a group or all).

``announce {text | url, then_listen?, priority?, wait_s?}``: exactly one of ``text``
(spoken by the device) and ``url`` (an http(s) WAV); ``priority`` ``"normal"`` (wait for
the turn in progress to end, up to ``wait_s``, default 120) or ``"urgent"`` (interrupt
it); ``then_listen`` opens a turn without the wake word afterwards. ``listen {}`` opens a
turn now (``busy`` unless the device is idle). Importing this module registers both.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from edgevoice.device.mqtt.commands import Arg, CommandError, ErrorCode, register_command
from edgevoice.device.mqtt.remote import UnsupportedCommandError

PRIORITIES = ("normal", "urgent")
MAX_TEXT_CHARS = 2000
MAX_WAIT_S = 600.0


@runtime_checkable
class AnnounceTarget(Protocol):
    async def announce(self, *, text: str, url: str, then_listen: bool, urgent: bool,
                       wait_s: float) -> dict[str, Any]:
        """Play the announcement (see the module doc); answer when it has played."""
        ...

    async def listen(self) -> dict[str, Any]:
        """Open a turn without the wake word; raise ``BusyError`` unless idle."""
        ...


def _target(target: Any, command: str) -> AnnounceTarget:
    if not isinstance(target, AnnounceTarget):
        raise UnsupportedCommandError(f"this device does not run {command}; update edgevoice on it")
    return target


def check_announcement(args: dict[str, Any]) -> dict[str, Any]:
    """The checked arguments of ``announce``; raises :class:`CommandError`."""
    text, url = args.get("text"), args.get("url")
    if (text is None) == (url is None):
        raise CommandError(ErrorCode.MISSING_ARGUMENT if text is None else ErrorCode.INVALID_ARGUMENT,
                           "announce needs exactly one of 'text' (to speak) and 'url' (a WAV to play)")
    if text is not None and len(text) > MAX_TEXT_CHARS:
        raise CommandError(ErrorCode.INVALID_ARGUMENT,
                           f"argument 'text' is longer than {MAX_TEXT_CHARS} characters")
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise CommandError(ErrorCode.INVALID_ARGUMENT,
                               f"argument 'url' must be an http:// or https:// URL, got {url[:60]!r}")
    priority = args.get("priority", "normal")
    if priority not in PRIORITIES:
        raise CommandError(ErrorCode.INVALID_ARGUMENT,
                           f"argument 'priority' must be one of {', '.join(PRIORITIES)}, got {priority!r}")
    return {"text": text or "", "url": url or "", "then_listen": bool(args.get("then_listen", False)),
            "urgent": priority == "urgent", "wait_s": float(args.get("wait_s", 120.0))}


async def _announce(target: Any, args: dict[str, Any]) -> Any:
    checked = check_announcement(args)
    return await _target(target, "announce").announce(**checked)


async def _listen(target: Any, args: dict[str, Any]) -> Any:
    return await _target(target, "listen").listen()


register_command("announce", {
    "text": Arg(str, required=False),
    "url": Arg(str, required=False),
    "then_listen": Arg(bool, required=False),
    "priority": Arg(str, required=False),
    "wait_s": Arg(float, required=False, minimum=0.0, maximum=MAX_WAIT_S),
}, _announce)
register_command("listen", {}, _listen)
