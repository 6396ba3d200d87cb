"""``edgevoice array doa|beam`` on real multi-channel WAVs of simulated rooms."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.array_scenes import room
from support.hearing_audio import espeak_speech

from edgevoice.audio.array.doa import angle_difference_deg
from edgevoice.audio.array.geometry import parse_geometry
from edgevoice.audio.io.wav import read_wav, write_wav
from edgevoice.device.cli import main


@pytest.fixture(scope="module")
def two_talkers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-channel recording: one phrase from 70°, a pause, another from 200°."""
    geometry = parse_geometry("respeaker-4mic")
    first = espeak_speech("turn on the kitchen light").astype(np.float64)
    second = espeak_speech("what time is it", voice="en-gb").astype(np.float64)
    length = 8000 + len(first) + 16000 + len(second) + 8000
    a = np.zeros(length)
    b = np.zeros(length)
    a[8000 : 8000 + len(first)] = first
    b[24000 + len(first) : 24000 + len(first) + len(second)] = second
    heard = room(geometry, [(70.0, 1.3, a), (200.0, 1.6, b)], rt60_s=0.3)
    pcm = np.clip(np.rint(heard / np.max(np.abs(heard)) * 16000), -32768, 32767).astype(np.int16)
    path = tmp_path_factory.mktemp("array") / "two_talkers.wav"
    write_wav(path, pcm)
    return path


def test_doa_names_each_segments_direction(two_talkers: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["array", "doa", str(two_talkers), "--geometry", "respeaker-4mic", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    segments = result["segments"]
    assert len(segments) == 2, segments
    assert segments[0]["start_s"] < segments[0]["end_s"] <= segments[1]["start_s"] < segments[1]["end_s"]
    assert angle_difference_deg(segments[0]["direction_deg"], 70.0) <= 10.0
    assert angle_difference_deg(segments[1]["direction_deg"], 200.0) <= 10.0


def test_beam_writes_steered_mono(
    two_talkers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "beam.wav"
    code = main(
        [
            "array",
            "beam",
            str(two_talkers),
            str(out),
            "--geometry",
            "respeaker-4mic",
            "--toward",
            "70",
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["toward_deg"] == 70.0
    mono, rate = read_wav(out)
    recording, _ = read_wav(two_talkers, rate=None, mono=False)
    assert rate == 16000
    assert abs(len(mono) - recording.shape[0]) <= 160 * 4
    assert np.max(np.abs(mono)) > 1000


def test_a_geometry_that_does_not_fit_the_recording_is_a_clear_error(
    two_talkers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["array", "doa", str(two_talkers), "--geometry", "respeaker-6mic-circular", "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "array_geometry"
    assert "6 microphones" in error["message"]
    assert main(["array", "doa", str(two_talkers), "--geometry", "no-such-array"]) == 1
    assert "unknown array geometry" in capsys.readouterr().err
