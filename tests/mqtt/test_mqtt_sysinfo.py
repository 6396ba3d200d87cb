"""The board's statistics from /proc and /sys files written by the test."""

from __future__ import annotations

import stat
from pathlib import Path

from edgevoice.device.system.sysinfo import (
    SystemSampler,
    cpu_percent,
    parse_get_throttled,
    parse_proc_stat,
    parse_wireless,
    read_soc_temperature,
)

WIRELESS = """Inter-| sta-|   Quality        |   Discarded packets               | Missed | WE
 face | tus | link level noise |  nwid  crypt   frag  retry   misc | beacon | 22
 wlan0: 0000   54.  -56.  -256        0      0      0      0      0        0
"""


def fake_proc(root: Path, busy: int, idle: int) -> Path:
    proc = root / "proc"
    (proc / "net").mkdir(parents=True, exist_ok=True)
    (proc / "stat").write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 2 3 4\n")
    (proc / "loadavg").write_text("0.50 0.25 0.10 1/100 1234\n")
    (proc / "meminfo").write_text("MemTotal:        1000 kB\nMemAvailable:     250 kB\n")
    (proc / "uptime").write_text("3600.5 7000.0\n")
    (proc / "net" / "wireless").write_text(WIRELESS)
    return proc


def test_sampler_reads_every_source(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, busy=100, idle=900)
    thermal = tmp_path / "temp"
    thermal.write_text("48312\n")
    freq = tmp_path / "freq"
    freq.write_text("1500000\n")
    vcgencmd = tmp_path / "vcgencmd"
    vcgencmd.write_text("#!/bin/sh\necho throttled=0x50005\n")
    vcgencmd.chmod(vcgencmd.stat().st_mode | stat.S_IEXEC)
    sampler = SystemSampler(proc=proc, thermal_zone=thermal, cpu_freq=freq, disk_path=str(tmp_path),
                            vcgencmd=str(vcgencmd))
    fake_proc(tmp_path, busy=150, idle=950)  # 50 busy of 100 jiffies
    stats = sampler.sample()
    assert stats.cpu_percent == 50.0
    assert (stats.load_1m, stats.load_5m, stats.load_15m) == (0.5, 0.25, 0.1)
    assert stats.mem_total_bytes == 1000 * 1024 and stats.mem_available_bytes == 250 * 1024
    assert stats.uptime_s == 3600.5
    assert stats.soc_temp_c == 48.312
    assert stats.cpu_clock_mhz == 1500.0
    assert stats.throttled == 0x50005
    assert stats.throttled_flags == ("under_voltage", "throttled", "under_voltage_occurred",
                                     "throttled_occurred")
    assert stats.wifi_link == 54.0 and stats.wifi_level_dbm == -56.0
    assert stats.disk_free_bytes is not None and stats.disk_free_bytes > 0
    assert stats.as_dict()["throttled_flags"][0] == "under_voltage"


def test_a_board_without_sensors_reports_none(tmp_path: Path) -> None:
    sampler = SystemSampler(proc=tmp_path / "noproc", thermal_zone=tmp_path / "none",
                            cpu_freq=tmp_path / "none", disk_path=str(tmp_path / "none"),
                            vcgencmd=str(tmp_path / "no-vcgencmd"))
    stats = sampler.sample()
    assert stats.cpu_percent is None and stats.soc_temp_c is None and stats.throttled is None
    assert stats.wifi_level_dbm is None and stats.disk_free_bytes is None


def test_parsers() -> None:
    assert parse_proc_stat("cpu  10 0 10 70 10 0 0 0 0 0\n") == (20, 100)
    assert cpu_percent((0, 0), (25, 100)) == 25.0
    assert cpu_percent((5, 5), (5, 5)) is None
    assert parse_get_throttled("throttled=0x0").flags == ()  # type: ignore[union-attr]
    assert parse_get_throttled("garbage") is None
    now = parse_get_throttled("throttled=0x4")
    assert now is not None and now.now and now.flags == ("throttled",)
    assert parse_wireless(WIRELESS) == {"wlan0": {"link": 54.0, "level_dbm": -56.0}}
    assert read_soc_temperature(Path("/nonexistent")) is None
