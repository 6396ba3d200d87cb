"""Silero's 16 kHz branch lifted out of its two-rate model: same numbers, less memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgevoice.audio.hearing.vad_silero import CONTEXT, WINDOW, SileroVad, sixteen_khz_graph
from edgevoice.models import ModelKind, resolve_model


@pytest.fixture(scope="module")
def silero_path() -> Path:
    return Path(resolve_model("silero-vad", ModelKind.VAD).path)


def _windows(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    t = np.arange(WINDOW) / 16000.0
    out = []
    for index in range(count):
        level = 9000.0 if index % 40 < 20 else 60.0  # bursts of loud voiced-like sound, then quiet
        tone = np.sin(2 * np.pi * (140 + 3 * index) * t) * level * 0.5
        out.append(np.clip(rng.standard_normal(WINDOW) * level * 0.3 + tone, -32768, 32767).astype(np.int16))
    return out


def test_the_lifted_branch_gives_the_whole_models_numbers_bit_for_bit(silero_path: Path) -> None:
    import onnxruntime as ort

    whole = ort.InferenceSession(str(silero_path), providers=["CPUExecutionProvider"])
    ours = SileroVad(silero_path, state_reset_s=0.0)  # the raw model carries its state on
    state = np.zeros((2, 1, 128), dtype=np.float32)
    buffer = np.zeros((1, CONTEXT + WINDOW), dtype=np.float32)
    probabilities = []
    for window in _windows(120):
        buffer[0, :CONTEXT] = buffer[0, WINDOW:]
        buffer[0, CONTEXT:] = window.astype(np.float32) / 32768.0
        output, state = whole.run(None, {"input": buffer, "state": state, "sr": np.array(16000, np.int64)})
        expected = float(output[0, 0])
        assert ours.probability(window) == expected
        probabilities.append(expected)
    assert len(set(probabilities)) > 50  # varied outputs, not one constant compared with itself


def test_the_lifted_graph_has_no_rate_branch_and_is_smaller(silero_path: Path) -> None:
    model = silero_path.read_bytes()
    lifted = sixteen_khz_graph(model)
    assert lifted is not None
    assert len(lifted) < 0.7 * len(model)  # the 8 kHz network's weights are gone
    assert sixteen_khz_graph(lifted) is None  # nothing left to lift
    assert sixteen_khz_graph(model, rate=8000) is None  # the branch is the 16 kHz one only


def test_a_model_of_another_shape_is_loaded_whole(silero_path: Path, tmp_path: Path) -> None:
    lifted = sixteen_khz_graph(silero_path.read_bytes())
    assert lifted is not None
    plain = tmp_path / "already_lifted.onnx"
    plain.write_bytes(lifted)
    vad = SileroVad(plain)  # no If left: loaded as it is
    windows = _windows(30)
    reference = SileroVad(silero_path)
    assert [vad.probability(w) for w in windows] == [reference.probability(w) for w in windows]
    assert sixteen_khz_graph(b"\x08\x07not an onnx model") is None
    assert sixteen_khz_graph(b"") is None
