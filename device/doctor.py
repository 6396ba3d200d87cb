"""``edgevoice doctor``: check that this device can do its job, with a fix for each failure.

Each check is a small function that returns a :class:`CheckResult`; blocking ones run in a
worker thread so the agent probe (async) and the rest share one event loop. A check never
raises: an unexpected error is its own failure, reported with the error's message.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import shutil
import subprocess
import threading
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.device.config.schema import Config
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)

PROBE_TEXT = "This is a connection check from edgevoice doctor. Please answer with one short word."
DISK_FAIL_MB = 200
DISK_WARN_MB = 1024
SOC_WARN_C = 80.0
TIMESYNC_FLAG = Path("/run/systemd/timesync/synchronized")


class CheckStatus(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    status: CheckStatus
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": str(self.status), "detail": self.detail,
                "fix": self.fix, "data": self.data}


@dataclass(frozen=True, slots=True)
class DoctorOptions:
    agent_timeout_s: float = 15.0
    mqtt_timeout_s: float = 5.0
    client_id: str = "edgevoice-doctor"
    timesync_flag: Path = TIMESYNC_FLAG


# --- audio ------------------------------------------------------------------------------


def check_audio(config: Config) -> CheckResult:
    """Open the configured capture and playback with the configured parameters, one period each."""
    from edgevoice.device.assembly.audio_io import open_backend

    audio = config.audio
    params = (f"capture {audio.capture_device} {audio.capture_channels} ch {audio.capture_rate} Hz "
              f"{audio.capture_format}, playback {audio.playback_device} {audio.playback_channels} ch "
              f"{audio.playback_rate} Hz")
    data = {"backend": audio.backend, "capture_device": audio.capture_device,
            "playback_device": audio.playback_device}
    try:
        backend = open_backend(audio, config.room, config.wav)
        backend.open()
        try:
            captured = backend.read()
            backend.write(np.zeros(backend.period_samples, dtype=np.int16))
        finally:
            backend.close()
    except (EdgeVoiceError, OSError, ValueError) as err:
        message = err.message if isinstance(err, EdgeVoiceError) else str(err)
        return CheckResult("audio", CheckStatus.FAIL, f"{audio.backend}: {message}",
                           "check [audio] capture_device/playback_device and their channels, rate and "
                           "format against `edgevoice devices` (or `edgevoice devices --suggest`)", data)
    frames = int(len(captured.mic))
    return CheckResult("audio", CheckStatus.OK, f"{audio.backend}: {params}; read {frames} samples",
                       data=data)


# --- models -----------------------------------------------------------------------------


def check_models(config: Config) -> CheckResult:
    from edgevoice.models.catalog import verify_all
    from edgevoice.models.store import models_dir_or_default

    folder = models_dir_or_default(config.models.dir or None)
    try:
        results = verify_all(folder)
    except (EdgeVoiceError, OSError) as err:
        return CheckResult("models", CheckStatus.FAIL, str(err), "run `edgevoice models verify`",
                           {"models_dir": str(folder)})
    bad = [r for r in results if not r.ok]
    data = {"models_dir": str(folder), "models": [r.as_dict() for r in results]}
    if bad:
        names = ", ".join(f"{r.name} ({'; '.join(r.problems)})" for r in bad)
        return CheckResult("models", CheckStatus.FAIL, f"not verified: {names}",
                           f"run `edgevoice models fetch {bad[0].name} --force`", data)
    if not results:
        return CheckResult("models", CheckStatus.WARN, f"no models in {folder}",
                           "fetch the models the config needs: `edgevoice models list`", data)
    return CheckResult("models", CheckStatus.OK,
                       f"{len(results)} verified in {folder}: {', '.join(r.name for r in results)}",
                       data=data)


# --- agent ------------------------------------------------------------------------------


async def check_agent(config: Config, options: DoctorOptions) -> CheckResult:
    """One real probe turn; reports the time to the first text."""
    from edgevoice.device.agents.base import UserTurn
    from edgevoice.device.agents.factory import build_agent

    provider = config.llm.provider
    where = {"agent": config.agent.url, "openai": config.openai.base_url, "ollama": config.ollama.base_url,
             "homeassistant": config.homeassistant.url}.get(provider, "built in")
    data: dict[str, Any] = {"provider": provider, "endpoint": where}
    start = time.monotonic()
    first: float | None = None
    text: list[str] = []
    try:
        client = build_agent(config)
        async with asyncio.timeout(options.agent_timeout_s):
            async for delta in client.reply(UserTurn(PROBE_TEXT)):
                if first is None:
                    first = time.monotonic() - start
                text.append(delta)
        close = getattr(client, "aclose", None)
        if close is not None:
            await close()
    except asyncio.CancelledError:
        raise
    except TimeoutError:
        return CheckResult("agent", CheckStatus.FAIL,
                           f"{provider} at {where}: no complete answer within {options.agent_timeout_s:g} s",
                           "check the agent server is running and reachable from this device", data)
    except EdgeVoiceError as err:
        return CheckResult("agent", CheckStatus.FAIL, f"{provider} at {where}: {err.message}",
                           "check [llm] provider and the provider's url and key (`edgevoice config show`)",
                           data)
    total = time.monotonic() - start
    if first is None:
        return CheckResult("agent", CheckStatus.FAIL, f"{provider} at {where}: answered with no text",
                           "the agent must reply with text; check its logs", data)
    data |= {"first_text_ms": round(first * 1000, 1), "total_ms": round(total * 1000, 1)}
    reply = "".join(text).strip().replace("\n", " ")
    return CheckResult("agent", CheckStatus.OK,
                       f"{provider} at {where}: first text after {first * 1000:.0f} ms "
                       f"(whole reply {total * 1000:.0f} ms): {reply[:40]!r}", data=data)


# --- MQTT -------------------------------------------------------------------------------


def check_mqtt(config: Config, options: DoctorOptions) -> CheckResult:
    """Connect with the configured credentials and wait for the broker's answer."""
    if not config.mqtt.url:
        return CheckResult("mqtt", CheckStatus.SKIP, "MQTT is off ([mqtt] url is empty)")
    from edgevoice.device.mqtt.connection import make_client

    data: dict[str, Any] = {"url": config.mqtt.url, "username": config.mqtt.username}
    answered = threading.Event()
    outcome: dict[str, Any] = {}

    def on_connect(client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        outcome["reason"] = reason
        answered.set()

    start = time.monotonic()
    try:
        client, address = make_client(config.mqtt, f"{options.client_id}-{int(start * 1000) % 100000}")
        client.on_connect = on_connect
        client.connect(address.host, address.port, keepalive=10)
    except EdgeVoiceError as err:
        return CheckResult("mqtt", CheckStatus.FAIL, err.message, "fix [mqtt] in the config", data)
    except (OSError, ValueError) as err:
        return CheckResult("mqtt", CheckStatus.FAIL, f"{config.mqtt.url}: {err}",
                           "check the broker is running, the host and port, and the CA (ca_file) "
                           "for mqtts://", data)
    client.loop_start()
    try:
        got = answered.wait(options.mqtt_timeout_s)
    finally:
        client.disconnect()
        client.loop_stop()
    if not got:
        return CheckResult("mqtt", CheckStatus.FAIL,
                           f"{config.mqtt.url}: no answer in {options.mqtt_timeout_s:g} s",
                           "check the broker and the firewall", data)
    reason = outcome["reason"]
    failed = reason.is_failure if hasattr(reason, "is_failure") else reason != 0
    data["connect_ms"] = round((time.monotonic() - start) * 1000, 1)
    if failed:
        return CheckResult("mqtt", CheckStatus.FAIL, f"{config.mqtt.url}: broker refused: {reason}",
                           "check [mqtt] username and password with the broker's admin", data)
    return CheckResult("mqtt", CheckStatus.OK,
                       f"{config.mqtt.url}: connected as {config.mqtt.username or '(anonymous)'} "
                       f"in {data['connect_ms']:.0f} ms", data=data)


# --- board ------------------------------------------------------------------------------


_PIN_FACTORIES = {
    "lgpio": "gpiozero.pins.lgpio:LGPIOFactory",
    "rpigpio": "gpiozero.pins.rpigpio:RPiGPIOFactory",
    "pigpio": "gpiozero.pins.pigpio:PiGPIOFactory",
    "native": "gpiozero.pins.native:NativeFactory",
}


def check_gpio(config: Config) -> CheckResult:
    gpio = config.gpio
    if not gpio.enabled or (gpio.button_pin < 0 and gpio.led_pin < 0):
        return CheckResult("gpio", CheckStatus.SKIP, "no button or LED configured ([gpio])")
    try:
        from gpiozero import Device
        from gpiozero.exc import BadPinFactory
    except ImportError:
        return CheckResult("gpio", CheckStatus.WARN, "gpiozero is not installed: no button or LED",
                           "pip install 'edgevoice[pi]'")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # gpiozero warns once per backend it falls back from
            if gpio.pin_factory:
                module_name, cls_name = _PIN_FACTORIES[gpio.pin_factory].split(":")
                factory = getattr(importlib.import_module(module_name), cls_name)()
            else:
                factory = Device.pin_factory or Device._default_pin_factory()
    except (BadPinFactory, ImportError, OSError, RuntimeError) as err:
        # The daemon still runs without GPIO (button disabled); an explicit factory is a fault.
        status = CheckStatus.FAIL if gpio.pin_factory else CheckStatus.WARN
        return CheckResult("gpio", status, f"no GPIO pin factory: {err}",
                           "on a Raspberry Pi install lgpio (pip install 'edgevoice[pi]'); elsewhere set "
                           "[gpio] button_pin = -1 and led_pin = -1")
    name = type(factory).__name__
    return CheckResult("gpio", CheckStatus.OK, f"pin factory {name}; button on BCM {gpio.button_pin}",
                       data={"pin_factory": name})


def check_soc() -> CheckResult:
    from edgevoice.device.system.sysinfo import read_soc_temperature, read_throttled

    temp = read_soc_temperature()
    throttled = read_throttled()
    data: dict[str, Any] = {"temperature_c": temp,
                            "throttled": None if throttled is None else hex(throttled.raw)}
    if temp is None and throttled is None:
        return CheckResult("soc", CheckStatus.SKIP, "no SoC temperature or throttling to read here",
                           data=data)
    parts = [f"{temp:.1f} °C" if temp is not None else "temperature unknown"]
    if throttled is not None:
        parts.append(f"throttled={hex(throttled.raw)} {' '.join(throttled.flags)}".strip())
        if throttled.now:
            return CheckResult("soc", CheckStatus.FAIL, ", ".join(parts),
                               "under-voltage or throttling now: use the official power supply and "
                               "a heatsink or fan", data)
    if temp is not None and temp >= SOC_WARN_C:
        return CheckResult("soc", CheckStatus.WARN, ", ".join(parts), "the SoC is hot: add cooling", data)
    return CheckResult("soc", CheckStatus.OK, ", ".join(parts), data=data)


def check_clock(options: DoctorOptions) -> CheckResult:
    if options.timesync_flag.exists():
        return CheckResult("clock", CheckStatus.OK, f"synchronised ({options.timesync_flag})")
    exe = shutil.which("timedatectl")
    if exe is not None:
        done = subprocess.run([exe, "show", "-p", "NTPSynchronized", "--value"], capture_output=True,
                              text=True, timeout=5, check=False)
        value = done.stdout.strip()
        if done.returncode == 0 and value == "yes":
            return CheckResult("clock", CheckStatus.OK, "synchronised (timedatectl)")
        if done.returncode == 0 and value == "no":
            return CheckResult("clock", CheckStatus.FAIL, "not synchronised",
                               "enable time sync (timedatectl set-ntp true) and check the network; "
                               "TLS to the agent and broker fails with a wrong clock")
    return CheckResult("clock", CheckStatus.SKIP, "no systemd time sync status on this system")


def check_disk(config: Config, root: Path = Path("/")) -> CheckResult:
    path = root / config.device.state_dir.lstrip("/")
    while not path.exists() and path != path.parent:
        path = path.parent
    usage = shutil.disk_usage(path)
    free_mb = usage.free / 1e6
    data = {"path": str(path), "free_mb": round(free_mb), "total_mb": round(usage.total / 1e6)}
    detail = f"{free_mb:.0f} MB free of {usage.total / 1e6:.0f} MB at {path}"
    fix = ("free space: remove unused models (`edgevoice models remove`) and old logs "
           "(journalctl --vacuum-size)")
    if free_mb < DISK_FAIL_MB:
        return CheckResult("disk", CheckStatus.FAIL, detail, fix, data)
    if free_mb < DISK_WARN_MB:
        return CheckResult("disk", CheckStatus.WARN, detail, fix, data)
    return CheckResult("disk", CheckStatus.OK, detail, data=data)


# --- running them ----------------------------------------------------------------------

CHECKS = ("audio", "models", "agent", "mqtt", "gpio", "soc", "clock", "disk")


async def _guarded(name: str, work: Callable[[], Awaitable[CheckResult]]) -> CheckResult:
    try:
        return await work()
    except asyncio.CancelledError:
        raise
    except Exception as err:  # a check must not take the others down with it
        _LOGGER.debug("check %s crashed", name, exc_info=True)
        return CheckResult(name, CheckStatus.FAIL, f"the check itself failed: {type(err).__name__}: {err}",
                           "run with --debug and report the traceback")


async def run_checks(config: Config, *, only: tuple[str, ...] = CHECKS,
                     options: DoctorOptions | None = None) -> list[CheckResult]:
    """Run the named checks (all by default) and return their results in order."""
    opts = options or DoctorOptions()
    blocking: dict[str, Callable[[], CheckResult]] = {
        "audio": lambda: check_audio(config),
        "models": lambda: check_models(config),
        "mqtt": lambda: check_mqtt(config, opts),
        "gpio": lambda: check_gpio(config),
        "soc": check_soc,
        "clock": lambda: check_clock(opts),
        "disk": lambda: check_disk(config),
    }
    results: list[CheckResult] = []
    for name in only:
        if name == "agent":
            results.append(await _guarded(name, lambda: check_agent(config, opts)))
        else:
            func = blocking[name]
            results.append(await _guarded(name, lambda f=func: asyncio.to_thread(f)))  # type: ignore[misc]
    return results


def failed(results: list[CheckResult]) -> bool:
    return any(r.status is CheckStatus.FAIL for r in results)


def render_table(results: list[CheckResult]) -> str:
    width = max(len(r.name) for r in results) if results else 5
    lines = [f"{'check':<{width}}  status  detail"]
    for r in results:
        lines.append(f"{r.name:<{width}}  {r.status.upper():<6}  {r.detail}")
        if r.fix and r.status in (CheckStatus.FAIL, CheckStatus.WARN):
            lines.append(f"{'':<{width}}  {'':<6}  fix: {r.fix}")
    return "\n".join(lines) + "\n"
