"""Wake word: microWakeWord ``.tflite`` models run through our own TFLite interpreter.

The model's ``.json`` manifest (beside the ``.tflite``) gives the wake phrase, the
probability cutoff and the sliding window; the caller may override them and the
refractory period (microWakeWord manifests carry none; the default is 2 s).

Front end: ``pymicro-features`` turns each 10 ms of 16 kHz audio into 40 features;
the model takes ``stride`` feature rows at a time (int8 [1, 3, 40], quantised with
the input tensor's scale and zero point) and returns a uint8 probability. The model
is stateful (streaming layers keep their state inside the interpreter).
The interpreter comes from ``ai_edge_litert`` or, where that is what is installed,
``tflite_runtime``.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.audio.errors import AudioError
from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.errors import MissingDependencyError, require

_LOGGER = logging.getLogger(__name__)

FEATURE_STEP_SAMPLES = 160  # the front end's 10 ms hop
_INT16_LE = np.dtype("<i2")
DEFAULT_REFRACTORY_S = 2.0


class WakeWordError(AudioError):
    code = "wakeword_error"


@dataclass(frozen=True, slots=True)
class WakeWordManifest:
    """What a microWakeWord ``.json`` says about its model."""

    name: str
    wake_word: str
    model_path: Path
    probability_cutoff: float
    sliding_window_size: int
    feature_step_ms: int = 10
    refractory_s: float = DEFAULT_REFRACTORY_S
    trained_languages: tuple[str, ...] = ()

    @classmethod
    def load(cls, path: str | Path) -> WakeWordManifest:
        """From the ``.json`` or the ``.tflite`` beside it."""
        path = Path(path)
        json_path = path if path.suffix == ".json" else path.with_suffix(".json")
        try:
            data = json.loads(json_path.read_text(encoding="utf-8"))
            micro = data["micro"]
            model = json_path.parent / data.get("model", json_path.with_suffix(".tflite").name)
            return cls(
                name=model.stem,
                wake_word=str(data.get("wake_word", model.stem)),
                model_path=model,
                probability_cutoff=float(micro["probability_cutoff"]),
                sliding_window_size=int(micro["sliding_window_size"]),
                feature_step_ms=int(micro.get("feature_step_size", 10)),
                refractory_s=float(micro.get("refractory_s", DEFAULT_REFRACTORY_S)),
                trained_languages=tuple(data.get("trained_languages", ())),
            )
        except OSError as err:
            raise WakeWordError(
                f"cannot read wake word manifest {json_path} ({err.strerror or err}); a microWakeWord "
                "model is a .tflite with its .json beside it"
            ) from err
        except (ValueError, KeyError, TypeError) as err:
            raise WakeWordError(f"{json_path} is not a microWakeWord manifest: {err!r}") from err


@dataclass(frozen=True, slots=True)
class WakeWordDetection:
    """The wake word was heard; ``t`` is the audio clock (s) when it was certain."""

    t: float
    name: str
    wake_word: str
    probability: float


def load_interpreter(model_path: str | Path) -> Any:
    """A TFLite interpreter for the model: ai_edge_litert, else tflite_runtime."""
    try:
        module: Any = require("ai_edge_litert.interpreter", "hearing", "The wake word detector")
    except MissingDependencyError:
        try:
            module = require("tflite_runtime.interpreter", "hearing", "The wake word detector")
        except MissingDependencyError as err:
            raise MissingDependencyError(
                "The wake word detector needs a TFLite interpreter: install it with "
                "pip install 'edgevoice[hearing]' (ai-edge-litert) or pip install tflite-runtime"
            ) from err
    try:
        interpreter = module.Interpreter(model_path=str(model_path), num_threads=1)
        interpreter.allocate_tensors()
    except (ValueError, RuntimeError) as err:
        raise WakeWordError(f"cannot load wake word model {model_path}: {err}") from err
    return interpreter


class WakeWordDetector:
    """Audio in (any frame length, 16 kHz int16), detections out, on the audio clock.

    ``threshold``, ``window`` and ``refractory_s`` default to the manifest's values.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        threshold: float | None = None,
        window: int | None = None,
        refractory_s: float | None = None,
    ) -> None:
        self.manifest = WakeWordManifest.load(model)
        features: Any = require("pymicro_features", "hearing", "The wake word front end")
        self._frontend_cls = features.MicroFrontend
        self._frontend = self._frontend_cls()
        self._interpreter = load_interpreter(self.manifest.model_path)
        inp = self._interpreter.get_input_details()[0]
        out = self._interpreter.get_output_details()[0]
        self._in_index, self._out_index = inp["index"], out["index"]
        self._in_dtype = inp["dtype"]
        self._stride = int(inp["shape"][1])
        self._in_scale, self._in_zero = (float(inp["quantization"][0]), int(inp["quantization"][1]))
        self._out_scale, self._out_zero = (float(out["quantization"][0]), int(out["quantization"][1]))
        if self._in_scale == 0.0 or self._out_scale == 0.0:
            raise WakeWordError(f"{self.manifest.model_path}: expected a quantised microWakeWord model")
        self._in_factor = np.float32(1.0 / self._in_scale)
        self.threshold = self.manifest.probability_cutoff if threshold is None else threshold
        self.window = self.manifest.sliding_window_size if window is None else window
        self.refractory_s = self.manifest.refractory_s if refractory_s is None else refractory_s
        if not 0.0 < self.threshold < 1.0 or self.window < 1 or self.refractory_s < 0:
            raise WakeWordError(
                f"wake word settings out of range: threshold {self.threshold} (0..1), "
                f"window {self.window} (>= 1), refractory {self.refractory_s} s (>= 0)"
            )
        self._probabilities: deque[float] = deque(maxlen=self.window)
        self._rows: list[list[float]] = []
        self._pending = b""
        self._samples = 0  # audio clock: samples consumed by the front end
        self._quiet_until = -1.0
        self.last_probability = 0.0
        _LOGGER.debug("wake word %s loaded (threshold %.2f, window %d)", self.name,
                      self.threshold, self.window)

    @property
    def name(self) -> str:
        return self.manifest.name

    def process(self, pcm: Pcm) -> list[WakeWordDetection]:
        raw = pcm.tobytes() if pcm.dtype == _INT16_LE else pcm.astype(_INT16_LE).tobytes()
        data = self._pending + raw if self._pending else raw
        size = len(data)
        step = FEATURE_STEP_SAMPLES * 2
        process_samples = self._frontend.process_samples
        detections: list[WakeWordDetection] = []
        offset = 0
        while offset + step <= size:
            result = process_samples(data if size == step else data[offset:offset + step])
            read = result.samples_read
            offset += read * 2
            self._samples += read
            if not result.features:
                continue
            self._rows.append(result.features)
            if len(self._rows) < self._stride:
                continue
            detection = self._decide(self._infer())
            if detection is not None:
                detections.append(detection)
        self._pending = data[offset:] if offset < size else b""
        return detections

    def skip(self, samples: int) -> None:
        """Let ``samples`` of audio go by unheard (a quiet room the caller chose not to
        score): the clock moves on, and the front end and the model keep the state the
        quiet left them in. A part-step held back from the last call goes with them."""
        self._samples += samples + len(self._pending) // 2
        self._pending = b""

    def _infer(self) -> float:
        rows = np.asarray(self._rows, dtype=np.float32)
        self._rows.clear()
        quantised = np.round(rows[None] * self._in_factor + self._in_zero).astype(self._in_dtype)
        self._interpreter.set_tensor(self._in_index, quantised)
        self._interpreter.invoke()
        raw = self._interpreter.get_tensor(self._out_index)
        return (float(raw.item()) - self._out_zero) * self._out_scale

    def _decide(self, probability: float) -> WakeWordDetection | None:
        self._probabilities.append(probability)
        if len(self._probabilities) < self.window:
            self.last_probability = 0.0
            return None
        mean = sum(self._probabilities) / len(self._probabilities)
        self.last_probability = mean
        now = self._samples / SAMPLE_RATE
        if mean <= self.threshold or now < self._quiet_until:
            return None
        self._quiet_until = now + self.refractory_s
        self._probabilities.clear()
        _LOGGER.debug("wake word %s: probability %.3f at %.2f s", self.name, mean, now)
        return WakeWordDetection(now, self.name, self.manifest.wake_word, mean)

    def reset(self) -> None:
        """A new stream: front end, probabilities, clock and the model's own state."""
        self._frontend = self._frontend_cls()
        self._interpreter = load_interpreter(self.manifest.model_path)
        self._probabilities.clear()
        self._rows.clear()
        self._pending = b""
        self._samples = 0
        self._quiet_until = -1.0
