"""Real FFTs along the last axis for the echo canceller's small frames.

The canceller runs a handful of 320-point FFTs per 10 ms; at that size half the cost of
``np.fft.rfft``/``irfft`` is their Python-side argument handling. numpy >= 2.0 computes
them with the pocketfft ufuncs in ``numpy.fft._pocketfft_umath``, which these call
directly. That module is private, so it is used only after a check at import that it
gives bit for bit what the public functions give; otherwise (older or newer numpy) the
public functions are used. Either way the results are identical.

    spectra = rfft(frames)          # (..., n) float64 -> (..., n // 2 + 1) complex128
    frames = irfft(spectra)         # (..., m) complex128 -> (..., 2 * (m - 1)) float64
    rfft(frames, out=spectra)       # into a preallocated array (the per-period calls)
    (float32 in, complex64 out and back: single precision throughout)
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import numpy.typing as npt

_Floats = npt.NDArray[np.floating[Any]]
_Complex = npt.NDArray[np.complexfloating[Any, Any]]
_AXES = [(-1,), (), (-1,)]


def _load_ufuncs() -> Any:
    try:  # numpy >= 2.0
        return importlib.import_module("numpy.fft._pocketfft_umath")
    except ImportError:  # numpy 1.x
        return None


_ufuncs: Any = _load_ufuncs()


def public_rfft(a: _Floats, out: _Complex | None = None) -> _Complex:
    spec: _Complex = np.fft.rfft(a, axis=-1)
    if out is None:
        return spec
    out[...] = spec
    return out


def public_irfft(a: _Complex, out: _Floats | None = None) -> _Floats:
    frames: _Floats = np.fft.irfft(a, axis=-1)
    if out is None:
        return frames
    out[...] = frames
    return out


def _direct_rfft(a: _Floats, out: _Complex | None = None) -> _Complex:
    n = a.shape[-1]
    if out is None:
        out = np.empty((*a.shape[:-1], n // 2 + 1),
                       dtype=np.complex64 if a.dtype == np.float32 else np.complex128)
    ufunc = _ufuncs.rfft_n_even if n % 2 == 0 else _ufuncs.rfft_n_odd
    ufunc(a, 1, axes=_AXES, out=out)
    return out


def _direct_irfft(a: _Complex, out: _Floats | None = None) -> _Floats:
    n = 2 * (a.shape[-1] - 1)
    if out is None:
        out = np.empty((*a.shape[:-1], n), dtype=np.float32 if a.dtype == np.complex64 else np.float64)
    _ufuncs.irfft(a, out.dtype.type(1.0 / n), axes=_AXES, out=out)  # 1/n in the output's precision
    return out


def _direct_matches() -> bool:
    """The private ufuncs exist and agree exactly with the public functions."""
    if _ufuncs is None:
        return False
    rng = np.random.default_rng(0)
    try:
        for shape, single in (((320,), False), ((3, 320), False), ((2, 4096), False), ((3, 320), True)):
            a: _Floats = rng.standard_normal(shape)
            if single:
                a = a.astype(np.float32)
            spec = public_rfft(a)
            if not np.array_equal(_direct_rfft(a), spec):
                return False
            if not np.array_equal(_direct_irfft(spec), public_irfft(spec)):
                return False
    except Exception:  # any change in the private API means: do not use it
        return False
    return True


DIRECT = _direct_matches()
"""True when the pocketfft ufuncs are called directly."""

rfft = _direct_rfft if DIRECT else public_rfft
irfft = _direct_irfft if DIRECT else public_irfft
