"""Type stub for the compiled kernel (``_kernel.c``): the echo canceller's per-block
arithmetic. Arrays must be C-contiguous with the dtypes named in ``_kernel.c``."""

from typing import Any

import numpy as np
import numpy.typing as npt

_Array = npt.NDArray[Any]

def estimate(W: _Array, Ws: _Array, X: _Array, wx: _Array, p0: _Array, /) -> float: ...
def errors(d: _Array, echo: _Array, fft_in: _Array, /) -> tuple[float, float, float]: ...
def frame(frame: _Array, fft_in: _Array, window: _Array, row: int, /) -> None: ...
def update(spectra: _Array, smooth: _Array, X: _Array, pxk: _Array, W: _Array, P: _Array,
           Ws: _Array, residual_lin: _Array, rs_err: _Array, gain: _Array, ifft_in: _Array,
           m_scale: float, delta: float, a2: float, noise: bool, j: int, js: int, over: float,
           over_talk: float, talk_ratio: float, floor: float, /) -> bool: ...
def suppress(spectrum: _Array, smooth: _Array, residual_lin: _Array, rs_err: _Array, gain: _Array,
             out: _Array, over: float, over_talk: float, talk_ratio: float, floor: float, /) -> bool: ...
def output(times: _Array, window_pcm: _Array, ola: _Array, pcm: npt.NDArray[np.int16],
           x_in: _Array | None, /) -> float: ...
