"""The leak estimate (``audio/aec/leak.py``): how much of the echo estimate's power is still
in the error, on made-up spectra, through both kernels (its per-bin arithmetic is the
kernel's ``leak`` call since 7 December).

Error that follows a share of the echo estimate's power, block to block, is read as that
share; noise that does not follow it is not; nothing is learnt while someone talks; and the compiled
kernel's statistics are the numpy path's to float32 rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgevoice.audio.aec.kernel import load_kernel
from edgevoice.audio.aec.leak import LeakEstimate
from edgevoice.audio.aec.numpy_kernel import NumpyKernel

BINS = 161


def _kernels() -> list[Any]:
    compiled = load_kernel()
    return [NumpyKernel(25)] + ([compiled] if compiled is not None else [])


def _spectrum(rng: np.random.Generator, power: np.ndarray | float) -> np.ndarray:
    phase = np.exp(2j * np.pi * rng.random(BINS))
    return (np.sqrt(power) * phase).astype(np.complex64)


def _echo(rng: np.random.Generator) -> np.ndarray:
    """An echo estimate whose level moves block to block, as speech does."""
    return _spectrum(rng, rng.exponential(1.0) * rng.exponential(1.0, BINS))


def _run(est: LeakEstimate, rng: np.random.Generator, blocks: int, *, share: float, noise: float,
         talking: bool = False) -> None:
    """``blocks`` blocks whose error is ``share`` of the echo estimate's power plus noise of
    mean power ``noise`` that moves block to block on its own, as a room's does."""
    for _ in range(blocks):
        Y = _echo(rng)
        est.update(_spectrum(rng, share * np.abs(Y) ** 2 + rng.exponential(noise, BINS)), Y, talking)


@pytest.mark.parametrize("kernel", _kernels(), ids=lambda k: type(k).__name__)
def test_error_that_follows_the_echo_estimate_is_read_as_its_share(kernel: Any) -> None:
    est = LeakEstimate(kernel, BINS, np.float32)
    _run(est, np.random.default_rng(1), 3000, share=0.2, noise=0.0)
    assert est.leak == pytest.approx(0.2, abs=0.03)
    # the usual level follows it up slowly: after ~15 s it stands near it, never over it
    assert 0.1 < est.usual <= est.leak


@pytest.mark.parametrize("kernel", _kernels(), ids=lambda k: type(k).__name__)
def test_noise_that_does_not_follow_the_echo_is_not_leak(kernel: Any) -> None:
    est = LeakEstimate(kernel, BINS, np.float32)
    _run(est, np.random.default_rng(2), 3000, share=0.0, noise=5.0)
    assert est.leak < 0.05


@pytest.mark.parametrize("kernel", _kernels(), ids=lambda k: type(k).__name__)
def test_nothing_is_learnt_while_someone_talks(kernel: Any) -> None:
    est = LeakEstimate(kernel, BINS, np.float32)
    rng = np.random.default_rng(3)
    _run(est, rng, 1000, share=0.05, noise=0.0)
    before = est.leak
    _run(est, rng, 300, share=0.9, noise=0.0, talking=True)
    assert est.leak == before
    assert est.error_sum > 0.5 * est.echo_sum  # the sums are this block's all the same


def test_both_kernels_give_the_same_statistics() -> None:
    compiled = load_kernel()
    if compiled is None:
        pytest.skip("the compiled kernel is not built")
    rng = np.random.default_rng(4)
    means = {name: np.zeros((2, BINS), dtype=np.float32) for name in ("c", "numpy")}
    py = {name: np.zeros(BINS, dtype=np.float32) for name in ("c", "numpy")}
    reference = NumpyKernel(25)
    for _ in range(300):
        Y = _echo(rng)
        E = _spectrum(rng, 0.3 * np.abs(Y) ** 2 + rng.exponential(1.0))
        got = compiled.leak(E, Y, means["c"], py["c"], 0.05)
        want = reference.leak(E, Y, means["numpy"], py["numpy"], 0.05)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6 * abs(want[2]) + 1e-9)
        np.testing.assert_array_equal(py["c"], py["numpy"])  # element-wise: the same float32 maths
        np.testing.assert_array_equal(means["c"], means["numpy"])


def test_the_kernel_rejects_a_leak_call_of_the_wrong_shape() -> None:
    compiled = load_kernel()
    if compiled is None:
        pytest.skip("the compiled kernel is not built")
    E = np.zeros(BINS, dtype=np.complex64)
    with pytest.raises(ValueError, match="means"):
        compiled.leak(E, E, np.zeros((2, BINS - 1), dtype=np.float32), np.zeros(BINS, dtype=np.float32), 0.05)
    with pytest.raises(ValueError, match="py"):
        compiled.leak(E, E, np.zeros((2, BINS), dtype=np.float32), np.zeros(BINS + 1, dtype=np.float32), 0.05)
