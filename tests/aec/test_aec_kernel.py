"""The edgevoice canceller's compiled kernel: built here, used by default, and giving what
the numpy reference path gives (to float32 rounding) on echo scenarios."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest
from support.aec import echo_scenario, erle_db

import edgevoice.audio.aec as aec_package
from edgevoice.audio.aec import AecError, create_canceller
from edgevoice.audio.aec import kernel as aec_kernel
from edgevoice.audio.aec.engine import EdgevoiceCanceller
from edgevoice.audio.aec.selftest import probe_signal

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)


def _scenario() -> tuple[np.ndarray, np.ndarray]:
    """Echo with +80 ppm drift at 40 ms, then a moved path at 180 ms (delay jump, the
    shadow filter re-learning), a person talking over it, then the far end silent long
    enough for the quiet path and the suppressor's pass-through."""
    mic_a, ref_a = echo_scenario(seconds=5.0, delay_ms=40.0, seed=5, drift_ppm=80.0)
    mic_b, ref_b = echo_scenario(seconds=5.0, delay_ms=180.0, seed=6)
    mic = np.concatenate([mic_a, mic_b, np.zeros(4 * 16000, dtype=np.int16)]).astype(np.int32)
    ref = np.concatenate([ref_a, ref_b, np.zeros(4 * 16000, dtype=np.int16)])
    near = probe_signal(4.0, -24.0, seed=11).astype(np.int32)
    start = 7 * 16000
    mic[start:start + len(near)] += near  # double talk, then the near end alone
    mic += (np.random.default_rng(3).standard_normal(len(mic)) * 3.0).astype(np.int32)
    return np.clip(mic, -32768, 32767).astype(np.int16), ref


def _run(aec: EdgevoiceCanceller, mic: np.ndarray,
         ref: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[float]]:
    out, linear, erle = [], [], []
    for start in range(0, len(mic), 160):
        out.append(aec.process(mic[start:start + 160], ref[start:start + 160]))
        linear.append(aec.linear)
        erle.append(aec.stats.erle_db or 0.0)
    return np.concatenate(out), np.concatenate(linear), erle


def test_the_kernel_is_built_and_used_by_default() -> None:
    # CI installs through ./dev (gcc + python3-dev): a build that silently stopped
    # producing the extension would fall back to numpy and fail here
    assert aec_kernel.load_kernel() is not None
    assert EdgevoiceCanceller().compiled
    assert create_canceller("edgevoice").compiled  # type: ignore[attr-defined]
    assert not EdgevoiceCanceller(compiled=False).compiled


def test_compiled_output_matches_the_numpy_path() -> None:
    mic, ref = _scenario()
    out_c, lin_c, erle_c = _run(EdgevoiceCanceller(compiled=True), mic, ref)
    out_n, lin_n, erle_n = _run(EdgevoiceCanceller(compiled=False), mic, ref)
    for got, want in ((out_c, out_n), (lin_c, lin_n)):
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        diff = g - w
        assert 10.0 * np.log10((w @ w) / (diff @ diff + 1e-9)) >= 60.0
    # both cancel the echo, by the same amount
    removed_c = erle_db(mic[:5 * 16000], out_c[:5 * 16000], 2.0, latency_ms=10.0)
    removed_n = erle_db(mic[:5 * 16000], out_n[:5 * 16000], 2.0, latency_ms=10.0)
    assert removed_n > 15.0
    assert abs(removed_c - removed_n) < 0.1
    np.testing.assert_allclose(erle_c, erle_n, atol=0.05)
    # the far end long silent: the mic passes through on both paths
    tail = slice(-16000, None)
    np.testing.assert_array_equal(out_c[tail][160:], mic[tail][:-160])


def test_without_the_kernel_the_numpy_path_runs_and_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "edgevoice.audio.aec._kernel", None)  # import fails
    monkeypatch.delattr(aec_package, "_kernel", raising=False)
    aec_kernel.log_fallback.cache_clear()
    assert aec_kernel.load_kernel() is None
    with caplog.at_level(logging.INFO, logger=aec_kernel.__name__):
        first = EdgevoiceCanceller()
        EdgevoiceCanceller()
    assert not first.compiled
    hints = [r for r in caplog.records if "gcc python3-dev" in r.getMessage()]
    assert len(hints) == 1 and hints[0].levelno == logging.INFO  # once, not per canceller
    mic, ref = echo_scenario(seconds=3.0, seed=2)
    out = first.process_signal(mic, ref)
    assert erle_db(mic, out, 2.0, latency_ms=10.0) > 10.0
    with pytest.raises(AecError) as err:
        EdgevoiceCanceller(compiled=True)
    assert err.value.code == "aec_kernel_missing"


def test_the_kernel_rejects_arrays_of_the_wrong_size_or_layout() -> None:
    kernel = aec_kernel.load_kernel()
    assert kernel is not None
    w = np.zeros((25, 161), dtype=np.complex64)
    ws = np.zeros((8, 161), dtype=np.complex64)
    wx = np.zeros((2, 161), dtype=np.complex64)
    p0 = np.zeros(161, dtype=np.float32)
    x = np.ones((25, 161), dtype=np.complex64)
    assert kernel.estimate(w, ws, x, wx, p0) == pytest.approx(161.0)
    with pytest.raises(ValueError, match="X"):
        kernel.estimate(w, ws, x[:24], wx, p0)
    with pytest.raises((ValueError, BufferError)):  # a strided view is not C-contiguous
        kernel.estimate(w, ws, np.ones((25, 322), dtype=np.complex64)[:, ::2], wx, p0)
    frozen = np.zeros(161, dtype=np.float32)
    frozen.setflags(write=False)
    with pytest.raises((ValueError, BufferError)):  # an output must be writable
        kernel.estimate(w, ws, x, wx, frozen)
    with pytest.raises(TypeError):
        kernel.estimate(w, ws, x, wx)


@pytest.mark.parametrize("n", [320, 8, 10, 12, 30, 90, 4096])
def test_the_kernels_real_ffts_match_numpy_to_float32_rounding(n: int) -> None:
    kernel = aec_kernel.load_kernel()
    assert kernel is not None
    rng = np.random.default_rng(n)
    frames = rng.standard_normal((3, n)).astype(np.float32)
    spectra = np.empty((3, n // 2 + 1), dtype=np.complex64)
    assert kernel.rfft(frames, spectra) is spectra
    want = np.fft.rfft(frames.astype(np.float64))
    assert np.abs(spectra - want).max() <= 1e-6 * np.abs(want).max()
    assert np.all(spectra[:, [0, -1]].imag == 0)
    # the inverse ignores the imaginary parts of the DC and Nyquist bins, as numpy does
    spec = (rng.standard_normal((3, n // 2 + 1)) + 1j * rng.standard_normal((3, n // 2 + 1)))
    back = np.empty((3, n), dtype=np.float32)
    assert kernel.irfft(spec.astype(np.complex64), back) is back
    want_back = np.fft.irfft(spec)
    assert np.abs(back - want_back).max() <= 1e-6 * np.abs(want_back).max()
    # one row at a time is the same as the batch
    one = np.empty(n // 2 + 1, dtype=np.complex64)
    kernel.rfft(frames[1], one)
    assert np.array_equal(one, spectra[1])


def test_the_kernels_ffts_reject_lengths_they_cannot_factor() -> None:
    kernel = aec_kernel.load_kernel()
    assert kernel is not None
    with pytest.raises(ValueError, match="2\\^a 3\\^b 5\\^c"):
        kernel.rfft(np.zeros((1, 14), dtype=np.float32), np.zeros((1, 8), dtype=np.complex64))
    with pytest.raises(ValueError, match="even"):
        kernel.rfft(np.zeros(9, dtype=np.float32), np.zeros(5, dtype=np.complex64))
    with pytest.raises(ValueError, match="spectra"):
        kernel.rfft(np.zeros((2, 320), dtype=np.float32), np.zeros((1, 161), dtype=np.complex64))
    # a rejected length leaves the cached plan intact
    frames = np.random.default_rng(1).standard_normal(320).astype(np.float32)
    kernel.rfft(frames[:80], np.zeros(41, dtype=np.complex64))
    with pytest.raises(ValueError):
        kernel.rfft(np.zeros(14, dtype=np.float32), np.zeros(8, dtype=np.complex64))
    got = kernel.rfft(frames[:80], np.zeros(41, dtype=np.complex64))
    want = np.fft.rfft(frames[:80].astype(np.float64))
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
