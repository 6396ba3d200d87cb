"""WebRTC AEC3 through the ``livekit`` wheel's ``rtc.AudioProcessingModule``
(install ``edgevoice[aec-reference]``). A reference point for edgevoice's own engine.

The delay hint is left at 0: AEC3 estimates the bulk delay itself. Measured gotcha: the
livekit FFI runtime can abort at interpreter exit (exit code 134); long-lived processes
are fine, and tests and benchmarks run it in a child process that ends with ``os._exit``.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from edgevoice.audio.aec.base import PERIOD_SAMPLES, AecError, AecStats, EchoCanceller, check_period
from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.errors import require

_LOGGER = logging.getLogger(__name__)


class WebrtcCanceller(EchoCanceller):
    """WebRTC AEC3 (echo cancellation only: no noise suppression, AGC or high-pass)."""

    name = "webrtc"
    latency_ms = 0.0

    def __init__(self) -> None:
        rtc: Any = require("livekit.rtc", "aec-reference", "The webrtc echo canceller")
        self._rtc = rtc
        self._apm: Any = None
        self._periods = 0
        self._mic_power = 1e-9
        self._out_power = 1e-9
        self._erle: float | None = None
        self._create()

    def _create(self) -> None:
        try:
            self._apm = self._rtc.AudioProcessingModule(echo_cancellation=True)
            self._apm.set_stream_delay_ms(0)
        except Exception as err:
            raise AecError(f"WebRTC AEC3 could not start: {err}", code="aec_unavailable") from err

    def process(self, mic: Pcm, reference: Pcm) -> Pcm:
        check_period(mic, reference)
        rtc = self._rtc
        far = rtc.AudioFrame(np.ascontiguousarray(reference, dtype=np.int16).tobytes(),
                             SAMPLE_RATE, 1, PERIOD_SAMPLES)
        self._apm.process_reverse_stream(far)
        near = rtc.AudioFrame(bytearray(np.ascontiguousarray(mic, dtype=np.int16).tobytes()),
                              SAMPLE_RATE, 1, PERIOD_SAMPLES)
        self._apm.process_stream(near)
        out = np.frombuffer(bytes(near.data.cast("B")), dtype=np.int16).copy()
        self._periods += 1
        if float(np.mean(reference.astype(np.float32) ** 2)) > 1e2:
            self._mic_power = 0.98 * self._mic_power + 0.02 * float(np.mean(mic.astype(np.float32) ** 2))
            self._out_power = 0.98 * self._out_power + 0.02 * float(np.mean(out.astype(np.float32) ** 2))
            self._erle = 10.0 * float(np.log10(self._mic_power / max(self._out_power, 1e-3)))
        return out

    def reset(self) -> None:
        self._create()
        self._periods = 0
        self._erle = None

    @property
    def stats(self) -> AecStats:
        converged = self._erle is not None and self._erle > 10.0
        return AecStats(self.name, erle_db=self._erle, converged=converged,
                        reference_ok=converged, periods=self._periods)
