"""``edgevoice aec`` on WAV files and ``edgevoice aec-selftest`` on the simulated room."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.aec import echo_scenario, erle_db

from edgevoice.audio.io.wav import read_wav, write_wav
from edgevoice.device.cli import main

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, object]]:
    code = main(argv)
    out = capsys.readouterr().out.strip().splitlines()
    return code, json.loads(out[-1])


def test_aec_command_cancels_echo_in_wav_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mic, ref = echo_scenario(seconds=6.0, delay_ms=80.0)
    write_wav(tmp_path / "mic.wav", mic)
    write_wav(tmp_path / "ref.wav", ref)
    files = ["--mic", str(tmp_path / "mic.wav"), "--ref", str(tmp_path / "ref.wav"),
             "--out", str(tmp_path / "out.wav")]
    code, result = _run(capsys, ["aec", *files, "--json"])
    assert code == 0
    assert result["engine"] == "edgevoice"
    assert isinstance(result["delay_ms"], float) and abs(result["delay_ms"] - 81.25) < 2.0
    assert isinstance(result["erle_db"], float) and result["erle_db"] > 20.0
    assert isinstance(result["cpu_ms_per_s"], float) and result["cpu_ms_per_s"] > 0
    out, rate = read_wav(tmp_path / "out.wav")
    assert rate == 16000 and len(out) == len(mic)
    assert erle_db(mic, out, 3.0, 10.0) > 20.0


def test_aec_command_converts_other_rates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import soxr

    mic, ref = echo_scenario(seconds=4.0, delay_ms=50.0)
    mic48 = soxr.resample(mic.astype(np.float32) / 32768, 16000, 48000)
    write_wav(tmp_path / "mic.wav", np.clip(mic48 * 32768, -32768, 32767).astype(np.int16), 48000)
    write_wav(tmp_path / "ref.wav", ref)
    files = ["--mic", str(tmp_path / "mic.wav"), "--ref", str(tmp_path / "ref.wav"),
             "--out", str(tmp_path / "out.wav")]
    code, result = _run(capsys, ["aec", *files, "--engine", "none", "--json"])
    assert code == 0 and result["engine"] == "none"
    assert isinstance(result["erle_db"], float) and abs(result["erle_db"]) < 1.0
    assert read_wav(tmp_path / "out.wav")[1] == 16000


def test_aec_command_reports_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["aec", "--mic", str(tmp_path / "nope.wav"), "--ref", str(tmp_path / "nope.wav"),
                 "--out", str(tmp_path / "o.wav")])
    assert code != 0
    assert "nope.wav" in capsys.readouterr().err


@pytest.mark.parametrize(("delay_ms", "gain_db"), [(40.0, -6.0), (180.0, -15.0)])
def test_selftest_measures_the_simulated_echo_path(
    capsys: pytest.CaptureFixture[str], delay_ms: float, gain_db: float
) -> None:
    code, result = _run(capsys, [
        "aec-selftest", "--json", "--set", "audio.backend=simulated", "--set", "room.speed=0",
        "--set", f"room.echo_delay_ms={delay_ms}", "--set", f"room.echo_gain_db={gain_db}",
    ])
    assert code == 0
    assert result["reference_ok"] is True
    # the room plays what was written one period later: 10 ms on top of its echo delay
    assert isinstance(result["delay_ms"], float) and abs(result["delay_ms"] - (delay_ms + 10.0)) <= 1.0
    assert isinstance(result["echo_gain_db"], float) and abs(result["echo_gain_db"] - gain_db) < 2.0
    assert isinstance(result["erle_db"], float) and result["erle_db"] > 10.0


def test_selftest_fails_when_nothing_comes_back(capsys: pytest.CaptureFixture[str]) -> None:
    code, result = _run(capsys, [
        "aec-selftest", "--json", "--set", "audio.backend=simulated", "--set", "room.speed=0",
        "--set", "room.echo_gain_db=-120",
    ])
    assert code == 1
    assert result["reference_ok"] is False and result["delay_ms"] is None
