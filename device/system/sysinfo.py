"""System statistics of the board: CPU, SoC temperature and throttling, load, memory,
disk, uptime, Wi-Fi signal.

Everything is read from ``/proc`` and ``/sys`` (and ``vcgencmd`` on a Raspberry Pi);
a value the board does not report is ``None``, never a guess. The readers take their
paths as parameters so tests point them at files they write. Reads are small but some
touch the file system or run a process: call :meth:`SystemSampler.sample` from a
worker thread (``asyncio.to_thread``), never on the event loop.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_LOGGER = logging.getLogger(__name__)

THERMAL_ZONE = Path("/sys/class/thermal/thermal_zone0/temp")
CPU_FREQ = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq")

# Bits of ``vcgencmd get_throttled`` (Raspberry Pi firmware).
THROTTLE_BITS = {
    0: "under_voltage",
    1: "arm_frequency_capped",
    2: "throttled",
    3: "soft_temperature_limit",
    16: "under_voltage_occurred",
    17: "arm_frequency_capped_occurred",
    18: "throttled_occurred",
    19: "soft_temperature_limit_occurred",
}


@dataclass(frozen=True, slots=True)
class Throttling:
    """The firmware's throttling word and what its bits mean."""

    raw: int
    flags: tuple[str, ...]

    @property
    def now(self) -> bool:
        """Under-voltage, capping or throttling is happening right now (bits 0-3)."""
        return bool(self.raw & 0xF)


def decode_throttled(raw: int) -> Throttling:
    return Throttling(raw, tuple(name for bit, name in THROTTLE_BITS.items() if raw >> bit & 1))


def parse_get_throttled(output: str) -> Throttling | None:
    """``throttled=0x50005`` → :class:`Throttling`; anything else → None."""
    _, sep, value = output.strip().partition("=")
    if not sep:
        return None
    try:
        return decode_throttled(int(value.strip(), 16))
    except ValueError:
        return None


def read_throttled(vcgencmd: str | None = None, timeout_s: float = 2.0) -> Throttling | None:
    """Run ``vcgencmd get_throttled`` if the board has it."""
    exe = vcgencmd or shutil.which("vcgencmd")
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, "get_throttled"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        _LOGGER.debug("vcgencmd failed: %s", err)
        return None
    if done.returncode != 0:
        return None
    return parse_get_throttled(done.stdout)


def read_soc_temperature(path: Path = THERMAL_ZONE) -> float | None:
    """SoC temperature in °C from a thermal zone (millidegrees), or None."""
    try:
        return int(path.read_text().strip()) / 1000.0
    except (OSError, ValueError):
        return None


def read_cpu_clock_mhz(path: Path = CPU_FREQ) -> float | None:
    try:
        return int(path.read_text().strip()) / 1000.0
    except (OSError, ValueError):
        return None


def parse_proc_stat(text: str) -> tuple[int, int] | None:
    """(busy, total) jiffies from the ``cpu`` line of ``/proc/stat``."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:]]
            idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
            total = sum(values[:8])  # guest time is already counted in user/nice
            return total - idle, total
    return None


def cpu_percent(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    busy = after[0] - before[0]
    total = after[1] - before[1]
    if total <= 0:
        return None
    return round(100.0 * busy / total, 1)


def parse_meminfo(text: str) -> dict[str, int]:
    """``/proc/meminfo`` in bytes, by key."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key.strip()] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    return out


def parse_wireless(text: str) -> dict[str, dict[str, float]]:
    """``/proc/net/wireless`` → ``{iface: {"link": q, "level_dbm": l}}``."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        fields = rest.split()
        if len(fields) < 3:
            continue
        try:
            link = float(fields[1].rstrip("."))
            level = float(fields[2].rstrip("."))
        except ValueError:
            continue
        out[name.strip()] = {"link": link, "level_dbm": level}
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class SystemStats:
    cpu_percent: float | None
    load_1m: float | None
    load_5m: float | None
    load_15m: float | None
    mem_total_bytes: int | None
    mem_available_bytes: int | None
    disk_free_bytes: int | None
    disk_total_bytes: int | None
    uptime_s: float | None
    soc_temp_c: float | None
    cpu_clock_mhz: float | None
    throttled: int | None
    throttled_flags: tuple[str, ...] | None
    wifi_link: float | None
    wifi_level_dbm: float | None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.throttled_flags is not None:
            data["throttled_flags"] = list(self.throttled_flags)
        return data


class SystemSampler:
    """Takes successive samples; CPU % is measured between two samples."""

    def __init__(
        self,
        *,
        proc: Path = Path("/proc"),
        thermal_zone: Path = THERMAL_ZONE,
        cpu_freq: Path = CPU_FREQ,
        disk_path: str = "/",
        vcgencmd: str | None = None,
    ) -> None:
        self._proc = proc
        self._thermal = thermal_zone
        self._cpu_freq = cpu_freq
        self._disk_path = disk_path
        self._vcgencmd = vcgencmd
        self._last_cpu: tuple[int, int] | None = self._cpu_times()

    def _cpu_times(self) -> tuple[int, int] | None:
        text = _read(self._proc / "stat")
        return parse_proc_stat(text) if text is not None else None

    def sample(self) -> SystemStats:
        now_cpu = self._cpu_times()
        cpu = None
        if now_cpu is not None and self._last_cpu is not None:
            cpu = cpu_percent(self._last_cpu, now_cpu)
        self._last_cpu = now_cpu

        load: list[float | None] = [None, None, None]
        loadavg = _read(self._proc / "loadavg")
        if loadavg:
            try:
                load = [float(v) for v in loadavg.split()[:3]]
            except ValueError:
                pass
        meminfo = parse_meminfo(_read(self._proc / "meminfo") or "")
        uptime = None
        uptime_text = _read(self._proc / "uptime")
        if uptime_text:
            try:
                uptime = float(uptime_text.split()[0])
            except (ValueError, IndexError):
                pass
        disk_free = disk_total = None
        try:
            usage = shutil.disk_usage(self._disk_path)
            disk_free, disk_total = usage.free, usage.total
        except OSError:
            pass
        wireless = parse_wireless(_read(self._proc / "net" / "wireless") or "")
        wifi = next(iter(wireless.values()), None)
        throttling = read_throttled(self._vcgencmd)
        return SystemStats(
            cpu_percent=cpu,
            load_1m=load[0],
            load_5m=load[1],
            load_15m=load[2],
            mem_total_bytes=meminfo.get("MemTotal"),
            mem_available_bytes=meminfo.get("MemAvailable"),
            disk_free_bytes=disk_free,
            disk_total_bytes=disk_total,
            uptime_s=uptime,
            soc_temp_c=read_soc_temperature(self._thermal),
            cpu_clock_mhz=read_cpu_clock_mhz(self._cpu_freq),
            throttled=throttling.raw if throttling else None,
            throttled_flags=throttling.flags if throttling else None,
            wifi_link=wifi["link"] if wifi else None,
            wifi_level_dbm=wifi["level_dbm"] if wifi else None,
        )


def process_cpu_seconds() -> float:
    """CPU time (user + system) this process has used."""
    times = os.times()
    return times.user + times.system
