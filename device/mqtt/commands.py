"""Fleet commands: what the runtime must implement, and the router that validates
requests, applies the rate limit and turns outcomes into answers.

A request is a JSON object on ``…/cmd/<name>``: its ``id`` (optional) is echoed in
the answer, every other key is an argument. An empty payload is ``{}``. The answer is
``{"id", "device", "ok", "result"}`` or ``{"id", "device", "ok": false, "error":
{"code", "message"}}``; the codes in :class:`ErrorCode` are stable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from edgevoice import __version__
from edgevoice.device.config.loader import ConfigError
from edgevoice.device.control import DeviceControl
from edgevoice.device.mqtt.ratelimit import TokenBucket
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)


class ErrorCode(StrEnum):
    UNKNOWN_COMMAND = "unknown_command"
    INVALID_JSON = "invalid_json"
    INVALID_REQUEST = "invalid_request"
    MISSING_ARGUMENT = "missing_argument"
    INVALID_ARGUMENT = "invalid_argument"
    VALIDATION_FAILED = "validation_failed"
    RATE_LIMITED = "rate_limited"
    COMMAND_FAILED = "command_failed"


class CommandError(EdgeVoiceError):
    """A request that cannot be carried out; ``code`` is one of :class:`ErrorCode`."""

    code = "command_failed"

    def __init__(self, code: ErrorCode, message: str, **details: Any) -> None:
        super().__init__(message, code=str(code))
        self.details = details


@dataclass(frozen=True, slots=True)
class Arg:
    kind: type[Any]
    required: bool = True
    minimum: float | None = None
    maximum: float | None = None


# The arguments each command takes. Commands not listed are unknown.
COMMAND_ARGS: dict[str, dict[str, Arg]] = {
    "ping": {},
    "state": {},
    "say": {"text": Arg(str)},
    "interrupt": {},
    "reset_session": {},
    "set_volume": {"level": Arg(float, minimum=0.0, maximum=1.0)},
    "mute": {"mic": Arg(bool)},
    "get_config": {},
    "set_config": {"patch": Arg(dict)},
    "reload": {},
    "restart": {},
    "fetch_model": {"name": Arg(str)},
    "knowledge_sync": {"url": Arg(str), "sha256": Arg(str)},
}

_TYPE_NAMES = {str: "a string", float: "a number", bool: "true or false", dict: "an object",
               int: "an integer"}

# Commands that other modules add (device/mqtt/remote.py: diagnostics, announcements,
# timers): name -> handler(target, checked arguments). Registered with
# :func:`register_command`, which also declares their arguments in COMMAND_ARGS.
CommandHandler = Callable[[Any, dict[str, Any]], Awaitable[Any]]
EXTRA_HANDLERS: dict[str, CommandHandler] = {}


def register_command(name: str, args: dict[str, Arg], handler: CommandHandler) -> None:
    """Add command ``name`` beside the built-in ones (its answer is what ``handler``
    returns; raise :class:`CommandError` or an ``EdgeVoiceError`` to refuse)."""
    if name in COMMAND_ARGS and name not in EXTRA_HANDLERS:
        raise ValueError(f"command {name!r} is built in")
    COMMAND_ARGS[name] = args
    EXTRA_HANDLERS[name] = handler


@dataclass(frozen=True, slots=True)
class Answer:
    request_id: Any
    ok: bool
    result: Any = None
    error: dict[str, Any] | None = None

    def as_dict(self, device_id: str) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.request_id, "device": device_id, "ok": self.ok}
        if self.ok:
            out["result"] = self.result
        else:
            out["error"] = self.error
        return out

    @classmethod
    def failure(cls, request_id: Any, code: str, message: str, **details: Any) -> Answer:
        return cls(request_id, False, error={"code": code, "message": message, **details})


def _check_value(name: str, spec: Arg, value: Any) -> Any:
    kind = spec.kind
    if kind is float:
        good = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    elif kind is int:
        good = isinstance(value, int) and not isinstance(value, bool)
    else:
        good = isinstance(value, kind)
    if not good:
        raise CommandError(
            ErrorCode.INVALID_ARGUMENT,
            f"argument {name!r} must be {_TYPE_NAMES.get(kind, kind.__name__)}, "
            f"got {json.dumps(value)[:40]}",
        )
    if kind is str and not value.strip():
        raise CommandError(ErrorCode.INVALID_ARGUMENT, f"argument {name!r} must not be empty")
    if spec.minimum is not None and value < spec.minimum:
        raise CommandError(ErrorCode.INVALID_ARGUMENT, f"argument {name!r} must be >= {spec.minimum:g}")
    if spec.maximum is not None and value > spec.maximum:
        raise CommandError(ErrorCode.INVALID_ARGUMENT, f"argument {name!r} must be <= {spec.maximum:g}")
    return float(value) if kind is float else value


def parse_request(name: str, payload: bytes) -> tuple[Any, dict[str, Any]]:
    """(request id, checked arguments); raises :class:`CommandError` with the id attached."""
    request_id: Any = None
    text = payload.decode("utf-8", errors="replace").strip() if payload else ""
    try:
        body = json.loads(text) if text else {}
    except ValueError as err:
        raise CommandError(ErrorCode.INVALID_JSON, f"the request is not valid JSON: {err}") from err
    if not isinstance(body, dict):
        raise CommandError(ErrorCode.INVALID_REQUEST, "the request must be a JSON object of arguments")
    request_id = body.pop("id", None)
    spec = COMMAND_ARGS.get(name)
    if spec is None:
        known = ", ".join(sorted(COMMAND_ARGS))
        raise CommandError(
            ErrorCode.UNKNOWN_COMMAND, f"unknown command {name!r} (known: {known})", id=request_id
        )
    args: dict[str, Any] = {}
    try:
        for key in body:
            if key not in spec:
                raise CommandError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{name} takes no argument {key!r}"
                    + (f" (it takes: {', '.join(spec)})" if spec else ""),
                )
        for key, arg in spec.items():
            if key not in body:
                if arg.required:
                    raise CommandError(ErrorCode.MISSING_ARGUMENT, f"{name} needs the argument {key!r}")
                continue
            args[key] = _check_value(key, arg, body[key])
    except CommandError as err:
        err.details["id"] = request_id
        raise
    return request_id, args


def _peek_id(payload: bytes) -> Any:
    try:
        body = json.loads(payload) if payload else None
    except ValueError:
        return None
    return body.get("id") if isinstance(body, dict) else None


class CommandRouter:
    """Runs commands against a :class:`DeviceControl`; never raises for a bad request."""

    def __init__(
        self,
        target: DeviceControl,
        *,
        device_id: str,
        rate: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._target = target
        self._device_id = device_id
        self._clock = clock
        self._bucket = TokenBucket(rate, burst, clock())
        self.handled = 0
        self.rejected: dict[str, int] = {}

    def _reject(self, request_id: Any, code: str, message: str, **details: Any) -> Answer:
        self.rejected[code] = self.rejected.get(code, 0) + 1
        return Answer.failure(request_id, code, message, **details)

    async def handle(self, name: str, payload: bytes) -> Answer:
        if not self._bucket.take(self._clock()):
            retry = round(self._bucket.retry_after(), 3)
            return self._reject(
                _peek_id(payload), ErrorCode.RATE_LIMITED,
                f"too many commands; try again in {retry:g} s", retry_after_s=retry,
            )
        try:
            request_id, args = parse_request(name, payload)
        except CommandError as err:
            details = dict(err.details)
            request_id = details.pop("id", None)
            return self._reject(request_id, err.code, err.message, **details)
        self.handled += 1
        try:
            result = await self._run(name, args)
        except asyncio.CancelledError:
            raise
        except ConfigError as err:
            problems = [str(p) for p in err.problems]
            return self._reject(
                request_id, ErrorCode.VALIDATION_FAILED,
                "the config patch does not validate; nothing was changed", problems=problems,
            )
        except EdgeVoiceError as err:
            return self._reject(request_id, err.code, err.message)
        except Exception as err:
            _LOGGER.exception("command %s failed", name)
            return self._reject(request_id, ErrorCode.COMMAND_FAILED, f"{name} failed: {err}")
        return Answer(request_id, True, result)

    async def _run(self, name: str, args: dict[str, Any]) -> Any:
        target = self._target
        if name == "ping":
            return {"pong": True, "version": __version__, "ts": round(time.time(), 3)}
        if name == "state":
            return await target.state()
        if name == "say":
            await target.say(args["text"])
        elif name == "interrupt":
            await target.interrupt()
        elif name == "reset_session":
            await target.reset_session()
        elif name == "set_volume":
            await target.set_volume(args["level"])
            return {"volume": args["level"]}
        elif name == "mute":
            await target.mute(args["mic"])
            return {"mic_muted": args["mic"]}
        elif name == "get_config":
            return await target.get_config()
        elif name == "set_config":
            return await target.set_config(args["patch"])
        elif name == "reload":
            await target.reload()
        elif name == "restart":
            await target.restart()
        elif name == "fetch_model":
            return await target.fetch_model(args["name"])
        elif name == "knowledge_sync":
            return await target.knowledge_sync(args["url"], args["sha256"])
        elif name in EXTRA_HANDLERS:
            return await EXTRA_HANDLERS[name](target, args)
        else:  # COMMAND_ARGS and this dispatch must agree
            raise CommandError(ErrorCode.UNKNOWN_COMMAND, f"unknown command {name!r}")
        return {"done": True}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


async def fetch_model_in_thread(name: str, models_dir: str | Path | None = None) -> dict[str, Any]:
    """Fetch ``name`` with the model registry (``edgevoice.models.fetch_model``) in a
    worker thread, so a download never blocks the event loop; the registry's errors
    (``model_not_found``, ``model_download_failed``, …) pass through with their codes.
    For runtimes that implement :meth:`DeviceControl.fetch_model`."""
    try:
        from edgevoice import models
    except ImportError as err:  # pragma: no cover - models is part of the package
        raise EdgeVoiceError("the model registry is not installed", code="model_registry_unavailable") \
            from err
    fetch = getattr(models, "fetch_model", None)
    if fetch is None:
        raise EdgeVoiceError(
            "this build has no model registry (edgevoice.models.fetch_model); update edgevoice",
            code="model_registry_unavailable",
        )
    result = await asyncio.to_thread(fetch, name, models_dir)
    plain = _plain(result)
    return plain if isinstance(plain, dict) else {"name": name, "result": plain}
