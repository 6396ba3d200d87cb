"""speexdsp's MDF echo canceller plus its preprocessor's residual-echo suppressor,
through ctypes on ``libspeexdsp.so.1`` (Raspberry Pi OS and Debian ship it as
``libspeexdsp1``). A reference point for edgevoice's own engine.

Gotchas (measured): the preprocessor only suppresses residual echo when its denoiser
is on, so the denoiser runs with 0 dB noise suppression to leave noise alone. speex
has no delay estimator: its filter must span bulk delay plus room, which is why it
degrades with long delays and clock drift.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

import numpy as np
import numpy.typing as npt

from edgevoice.audio.aec.base import PERIOD_SAMPLES, AecError, AecStats, EchoCanceller, check_period
from edgevoice.audio.frames import SAMPLE_RATE, Pcm

_LOGGER = logging.getLogger(__name__)

_ECHO_SET_SAMPLING_RATE = 24
_ECHO_GET_IMPULSE_RESPONSE_SIZE = 27
_ECHO_GET_IMPULSE_RESPONSE = 29
_PREPROCESS_SET_DENOISE = 0
_PREPROCESS_SET_AGC = 2
_PREPROCESS_SET_DEREVERB = 8
_PREPROCESS_SET_NOISE_SUPPRESS = 18
_PREPROCESS_SET_ECHO_SUPPRESS = 20
_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE = 22
_PREPROCESS_SET_ECHO_STATE = 24

_Int16Ptr = ctypes.POINTER(ctypes.c_int16)


def load_speexdsp() -> ctypes.CDLL:
    """Load libspeexdsp, or raise an AecError that says what to install."""
    names = ["libspeexdsp.so.1"]
    found = ctypes.util.find_library("speexdsp")
    if found:
        names.append(found)
    last: OSError | None = None
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError as err:
            last = err
            continue
        lib.speex_echo_state_init.restype = ctypes.c_void_p
        lib.speex_echo_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.speex_echo_cancellation.argtypes = [ctypes.c_void_p, _Int16Ptr, _Int16Ptr, _Int16Ptr]
        lib.speex_echo_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.speex_echo_state_reset.argtypes = [ctypes.c_void_p]
        lib.speex_echo_state_destroy.argtypes = [ctypes.c_void_p]
        lib.speex_preprocess_state_init.restype = ctypes.c_void_p
        lib.speex_preprocess_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.speex_preprocess_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.speex_preprocess_run.argtypes = [ctypes.c_void_p, _Int16Ptr]
        lib.speex_preprocess_state_destroy.argtypes = [ctypes.c_void_p]
        return lib
    raise AecError(
        f"the speex echo canceller needs libspeexdsp.so.1 ({last}); install it with "
        "'apt-get install libspeexdsp1' or choose [aec] engine = \"edgevoice\"",
        code="aec_unavailable",
    )


class SpeexCanceller(EchoCanceller):
    """speexdsp MDF + preprocessor residual echo suppression."""

    name = "speex"
    latency_ms = 0.0

    def __init__(self, *, filter_ms: int = 400, echo_suppress_db: int = -40,
                 echo_suppress_active_db: int = -15) -> None:
        self._lib = load_speexdsp()
        self._filter = SAMPLE_RATE * filter_ms // 1000
        self._suppress = (echo_suppress_db, echo_suppress_active_db)
        self._echo: int | None = None
        self._pre: int | None = None
        self._out = np.zeros(PERIOD_SAMPLES, dtype=np.int16)
        self._periods = 0
        self._mic_power = 1e-9
        self._out_power = 1e-9
        self._erle: float | None = None
        self._create()

    def _create(self) -> None:
        lib = self._lib
        self._echo = lib.speex_echo_state_init(PERIOD_SAMPLES, self._filter)
        self._pre = lib.speex_preprocess_state_init(PERIOD_SAMPLES, SAMPLE_RATE)
        if not self._echo or not self._pre:
            raise AecError("speexdsp could not allocate its echo state", code="aec_unavailable")
        rate = ctypes.c_int(SAMPLE_RATE)
        lib.speex_echo_ctl(self._echo, _ECHO_SET_SAMPLING_RATE, ctypes.byref(rate))
        for request, value in (
            (_PREPROCESS_SET_DENOISE, 1),
            (_PREPROCESS_SET_NOISE_SUPPRESS, 0),
            (_PREPROCESS_SET_AGC, 0),
            (_PREPROCESS_SET_DEREVERB, 0),
            (_PREPROCESS_SET_ECHO_SUPPRESS, self._suppress[0]),
            (_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, self._suppress[1]),
        ):
            arg = ctypes.c_int(value)
            lib.speex_preprocess_ctl(self._pre, request, ctypes.byref(arg))
        lib.speex_preprocess_ctl(self._pre, _PREPROCESS_SET_ECHO_STATE, ctypes.c_void_p(self._echo))

    def process(self, mic: Pcm, reference: Pcm) -> Pcm:
        check_period(mic, reference)
        mic_c = np.ascontiguousarray(mic, dtype=np.int16)
        ref_c = np.ascontiguousarray(reference, dtype=np.int16)
        out = np.empty(PERIOD_SAMPLES, dtype=np.int16)
        self._lib.speex_echo_cancellation(
            self._echo, mic_c.ctypes.data_as(_Int16Ptr), ref_c.ctypes.data_as(_Int16Ptr),
            out.ctypes.data_as(_Int16Ptr),
        )
        self._lib.speex_preprocess_run(self._pre, out.ctypes.data_as(_Int16Ptr))
        self._periods += 1
        ref_power = float(np.mean(ref_c.astype(np.float32) ** 2))
        if ref_power > 1e2:
            self._mic_power = 0.98 * self._mic_power + 0.02 * float(np.mean(mic_c.astype(np.float32) ** 2))
            self._out_power = 0.98 * self._out_power + 0.02 * float(np.mean(out.astype(np.float32) ** 2))
            self._erle = 10.0 * float(np.log10(self._mic_power / max(self._out_power, 1e-3)))
        return out

    def impulse_response(self) -> npt.NDArray[np.float64]:
        """The adaptive filter's current impulse response (its peak gives the delay)."""
        size = ctypes.c_int(0)
        self._lib.speex_echo_ctl(self._echo, _ECHO_GET_IMPULSE_RESPONSE_SIZE, ctypes.byref(size))
        buf = (ctypes.c_int32 * size.value)()
        self._lib.speex_echo_ctl(self._echo, _ECHO_GET_IMPULSE_RESPONSE, buf)
        taps: npt.NDArray[np.float64] = np.array(buf, dtype=np.float64)
        return taps

    def reset(self) -> None:
        self.close()
        self._create()
        self._periods = 0
        self._erle = None

    @property
    def stats(self) -> AecStats:
        delay: float | None = None
        if self._periods > 200:
            ir = self.impulse_response()
            if ir.size and np.max(np.abs(ir)) > 0:
                delay = 1000.0 * int(np.argmax(np.abs(ir))) / SAMPLE_RATE
        converged = self._erle is not None and self._erle > 10.0
        return AecStats(self.name, delay_ms=delay, erle_db=self._erle, converged=converged,
                        reference_ok=converged, periods=self._periods)

    def close(self) -> None:
        if self._pre:
            self._lib.speex_preprocess_state_destroy(self._pre)
            self._pre = None
        if self._echo:
            self._lib.speex_echo_state_destroy(self._echo)
            self._echo = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
