"""The canceller's FFT helpers give exactly what numpy's public FFTs give."""

from __future__ import annotations

import numpy as np
import pytest

from edgevoice.audio.aec import fft


@pytest.mark.parametrize("single", [False, True])
@pytest.mark.parametrize("shape", [(320,), (3, 320), (2, 4096), (4, 321)])
def test_helpers_match_numpy_bit_for_bit(shape: tuple[int, ...], single: bool) -> None:
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape).astype(np.float32 if single else np.float64)
    spec = fft.rfft(a)
    assert spec.dtype == (np.complex64 if single else np.complex128)
    assert np.array_equal(spec, np.fft.rfft(a, axis=-1))
    if shape[-1] % 2 == 0:  # irfft gives even lengths
        back = fft.irfft(spec)
        assert back.dtype == a.dtype
        assert np.array_equal(back, np.fft.irfft(spec, axis=-1))
    # rows of a batch are the same as one at a time (the engine batches its FFTs)
    if len(shape) == 2:
        assert all(np.array_equal(spec[i], fft.rfft(a[i])) for i in range(shape[0]))


def test_direct_path_is_used_on_numpy_2() -> None:
    if int(np.__version__.split(".")[0]) < 2:
        pytest.skip("numpy 1.x has no pocketfft ufuncs: the public functions are used")
    assert fft.DIRECT
    assert fft.rfft is not fft.public_rfft
