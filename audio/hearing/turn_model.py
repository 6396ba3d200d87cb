"""Is the person done? A turn-completion model scores the end of a turn's audio.

The model is pipecat's smart-turn v3 (a Whisper-tiny encoder and a classifier, ONNX int8,
BSD-2-Clause; registry name ``smart-turn-v3``). Its contract, read from the graph and
from pipecat's reference code: one input ``input_features`` of shape ``(batch, 80, 800)``
float32 — Whisper log-mel features of the last 8 s of 16 kHz audio, zero-padded at the
start — and one output of shape ``(batch, 1)``: the probability that the turn is complete
(named ``logits``, but already squashed into 0..1).

:func:`log_mel_features` is our own numpy version of Whisper's features (no model, no
onnxruntime: testable alone). :class:`TurnModel` runs the model on one thread;
:class:`TurnWorker` runs it off the audio thread, so the front end never waits for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm

_LOGGER = logging.getLogger(__name__)

WINDOW_S = 8  # the model hears the last 8 s of the turn
WINDOW_SAMPLES = WINDOW_S * SAMPLE_RATE
N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 80
FRAMES = WINDOW_SAMPLES // HOP  # 800
_INPUT = "input_features"


# --- features -------------------------------------------------------------------------
def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (what Whisper uses): linear to 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz * 3.0 / 200.0
    log = 15.0 + np.log(np.maximum(hz, 1e-12) / 1000.0) * (27.0 / np.log(6.4))
    return np.where(hz < 1000.0, linear, log)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    return np.where(mel < 15.0, mel * 200.0 / 3.0, 1000.0 * np.exp((mel - 15.0) * np.log(6.4) / 27.0))


@cache
def mel_filters() -> np.ndarray:
    """``(N_MELS, N_FFT // 2 + 1)``: triangles evenly spaced on the Slaney scale from 0 Hz to
    Nyquist, each scaled to unit area (Slaney normalisation), as Whisper's filterbank."""
    edges = _mel_to_hz(np.linspace(0.0, float(_hz_to_mel(np.array(SAMPLE_RATE / 2))), N_MELS + 2))
    bins = np.linspace(0.0, SAMPLE_RATE // 2, N_FFT // 2 + 1)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (bins[None, :] - lower) / (centre - lower)
    falling = (upper - bins[None, :]) / (upper - centre)
    triangles = np.clip(np.minimum(rising, falling), 0.0, None)
    filters: np.ndarray = triangles * (2.0 / (upper - lower))
    return filters


@cache
def _hann() -> np.ndarray:
    n = np.arange(N_FFT, dtype=np.float64)
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * n / N_FFT)  # periodic, as torch.hann_window


def model_window(pcm: Pcm) -> np.ndarray:
    """The last :data:`WINDOW_S` seconds of 16 kHz int16 audio as float32 in -1..1, padded
    with zeros at the start when shorter (the model was trained on the end of turns)."""
    audio = np.asarray(pcm, dtype=np.float32)[-WINDOW_SAMPLES:] / 32768.0
    if len(audio) < WINDOW_SAMPLES:
        audio = np.concatenate((np.zeros(WINDOW_SAMPLES - len(audio), np.float32), audio))
    return audio


def log_mel_features(window: np.ndarray) -> np.ndarray:
    """Whisper's log-mel features of exactly :data:`WINDOW_SAMPLES` of audio: ``(80, 800)``
    float32. The waveform is first scaled to zero mean and unit variance (so the input level
    does not matter), then: centred 25 ms periodic-Hann frames every 10 ms (reflect-padded),
    power spectrum, Slaney mel filterbank, log10 (floored at 1e-10), the last frame dropped,
    everything below the maximum minus 8 raised to it, and ``(x + 4) / 4``."""
    x = np.asarray(window, dtype=np.float32)
    if x.shape != (WINDOW_SAMPLES,):
        raise ValueError(f"expected {WINDOW_SAMPLES} samples, got shape {x.shape}")
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
    padded = np.pad(x.astype(np.float64), N_FFT // 2, mode="reflect")
    starts = np.arange(FRAMES + 1) * HOP
    frames = padded[starts[:, None] + np.arange(N_FFT)[None, :]]
    power = np.abs(np.fft.rfft(frames * _hann(), axis=1)) ** 2  # (801, 201)
    mel = np.log10(np.maximum(power @ mel_filters().T, 1e-10)).T[:, :FRAMES]
    mel = np.maximum(mel, mel.max() - 8.0)
    scaled: np.ndarray = ((mel + 4.0) / 4.0).astype(np.float32)
    return scaled


# --- the model ------------------------------------------------------------------------
class TurnModel:
    """smart-turn v3 on onnxruntime, one intra-op thread (it shares a small board with the
    front end, the ASR and the TTS). :meth:`completion` is P(the turn is complete)."""

    def __init__(self, path: str | Path, *, threads: int = 1) -> None:
        import onnxruntime as ort  # only when the model is used: discovery never loads it

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session: Any = ort.InferenceSession(str(path), sess_options=options,
                                                  providers=["CPUExecutionProvider"])
        inputs = self._session.get_inputs()
        if len(inputs) != 1 or inputs[0].name != _INPUT or list(inputs[0].shape[1:]) != [N_MELS, FRAMES]:
            raise ValueError(f"{path} is not a smart-turn v3 model: inputs "
                             f"{[(i.name, i.shape) for i in inputs]}")
        self.path = Path(path)

    def completion(self, pcm: Pcm) -> float:
        """P(complete) for a turn whose audio (pre-roll to now) is ``pcm``."""
        features = log_mel_features(model_window(pcm))[None]
        out = self._session.run(None, {_INPUT: features})[0]
        return float(np.asarray(out).reshape(-1)[0])


# --- off the audio thread -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TurnVerdict:
    """The model's answer for the pause ``ticket`` (see the endpointer's ``TurnCheck``)."""

    ticket: int
    probability: float
    cpu_ms: float  # thread CPU the decision took


class TurnJudge(Protocol):
    """What the listener asks about a pause: :meth:`ask` must not block the audio thread;
    :meth:`verdicts` returns the answers ready so far (never waits)."""

    def ask(self, ticket: int, pcm: Pcm) -> None: ...

    def verdicts(self) -> list[TurnVerdict]: ...

    def close(self) -> None: ...


class TurnWorker(TurnJudge):
    """Runs a scorer (``pcm -> P(complete)``) on a thread of its own. :meth:`ask` returns at
    once; :meth:`verdicts` hands back what is ready without waiting. A newer question
    replaces one not yet started: only the latest pause matters. onnxruntime and numpy's FFT
    release the GIL while they compute, so the audio thread keeps running."""

    def __init__(self, score: Callable[[Pcm], float]) -> None:
        self._score = score
        self._cond = threading.Condition()
        self._pending: tuple[int, Pcm] | None = None
        self._done: list[TurnVerdict] = []
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="edgevoice-turn", daemon=True)
        self._thread.start()

    def ask(self, ticket: int, pcm: Pcm) -> None:
        with self._cond:
            self._pending = (ticket, pcm)
            self._cond.notify()

    def verdicts(self) -> list[TurnVerdict]:
        with self._cond:
            done, self._done = self._done, []
        return done

    def wait_idle(self, timeout_s: float = 5.0) -> bool:
        """Tests and benchmarks: wait until no question is pending or running."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._pending is not None or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self) -> None:
        with self._cond:
            self._closed = True  # a decision under way finishes; its answer goes unread
            self._cond.notify_all()
        self._thread.join(5.0)

    _busy = False

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                assert self._pending is not None
                (ticket, pcm), self._pending = self._pending, None
                self._busy = True
            start = time.thread_time()
            try:
                probability = self._score(pcm)
            except Exception:  # a failed decision falls back to the fixed silence
                _LOGGER.exception("the turn model failed; this pause ends on silence alone")
                probability = float("nan")
            verdict = TurnVerdict(ticket, probability, 1000.0 * (time.thread_time() - start))
            with self._cond:
                self._busy = False
                if not np.isnan(probability):
                    self._done.append(verdict)
                self._cond.notify_all()
