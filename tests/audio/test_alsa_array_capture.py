"""Every microphone of an array through the ALSA capture path (``keep_mics=True``).

Real alsa-lib ``file`` PCMs over raw files (unpaced), on both loops: pyalsaaudio
(:class:`AlsaBackend`) and the C period loop (:class:`RtAlsaBackend`). At 16 kHz S16 each
column of ``Captured.mics`` must be the channel that was written, sample for sample; in
S32 and at 48 kHz each column must be what the same conversion makes of that channel
alone, and the columns, the mix and the loopback must stay on one clock.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.alsa_devices import AlsaDevices, install_alsa_devices, ramp_channels, write_raw

from edgevoice.audio.io import rtloop
from edgevoice.audio.io.alsa import AlsaBackend
from edgevoice.audio.io.backend import Captured
from edgevoice.audio.io.duplex import DuplexLoop
from edgevoice.audio.io.rtloop import RtAlsaBackend, open_alsa_backend
from edgevoice.audio.speaking.playback import Speaker

P = 160
PERIODS = 30
_NO_C_LOOP = pytest.mark.skipif(rtloop.load_rtloop() is None, reason="the C period loop is not built")
LOOPS = [pytest.param("python", id="pyalsaaudio"), pytest.param("c", id="c-loop", marks=_NO_C_LOOP)]


@pytest.fixture
def alsa_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AlsaDevices:
    return install_alsa_devices(tmp_path, monkeypatch)


def _backend(loop: str, **options: Any) -> AlsaBackend:
    kind = RtAlsaBackend if loop == "c" else AlsaBackend
    return kind(P, paced=False, **options)


def _read(backend: AlsaBackend, periods: int = PERIODS) -> list[Captured]:
    with backend:
        return [backend.read() for _ in range(periods)]


def _noise(frames: int, channels: int, fmt: str, seed: int) -> np.ndarray:
    """Distinct noise per channel, well inside full scale (resampling must not clip it);
    in S32 with low bits that a 16-bit reduction would drop."""
    rng = np.random.default_rng(seed)
    data = np.rint(rng.standard_normal((frames, channels)) * 3000).astype(np.int64)
    if fmt == "S32_LE":
        data = data << 16 | rng.integers(0, 65536, (frames, channels))
    return data


def _options(devices: AlsaDevices, path: Path, frames: np.ndarray, *, rate: int, fmt: str,
             mics: tuple[int, ...], reference: int = -1) -> dict[str, Any]:
    channels = frames.shape[1]
    return dict(capture_device=devices.mic(write_raw(path, frames, fmt), channels, rate, fmt),
                playback_device=devices.null, capture_channels=channels, capture_rate=rate,
                capture_format=fmt, mic_channels=mics, reference_channel=reference)


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("mics", [(0, 1, 2, 3), (5, 0, 2, 4, 1, 3)], ids=["4ch", "6ch"])
def test_16k_s16_gives_every_mic_bit_exact_and_the_mix_unchanged(
        alsa_devices: AlsaDevices, tmp_path: Path, loop: str, mics: tuple[int, ...]) -> None:
    frames = ramp_channels((PERIODS + 20) * P, len(mics))
    options = _options(alsa_devices, tmp_path / "mic.raw", frames, rate=16000, fmt="S16_LE", mics=mics)
    got = _read(_backend(loop, keep_mics=True, **options))
    plain = _read(_backend(loop, **options))
    for captured in got:
        assert captured.mics is not None
        assert captured.mics.dtype == np.int16
        assert captured.mics.shape == (P, len(mics))
    columns = np.concatenate([c.mics for c in got if c.mics is not None])
    assert np.array_equal(columns, frames[: PERIODS * P, list(mics)].astype(np.int16))
    # The mix is what it is without keep_mics, and it is the columns' average.
    mix = np.concatenate([c.mic for c in got])
    assert np.array_equal(mix, np.concatenate([c.mic for c in plain]))
    assert all(c.mics is None for c in plain)
    average = columns.astype(np.float64).mean(axis=1)
    assert np.max(np.abs(mix - average)) <= 0.5 + 1e-3


@pytest.mark.parametrize("loop", LOOPS)
def test_columns_follow_mic_channels_and_stay_on_the_loopbacks_clock(
        alsa_devices: AlsaDevices, tmp_path: Path, loop: str) -> None:
    order = (3, 1, 0, 2)
    frames = ramp_channels((PERIODS + 20) * P, 5)
    options = _options(alsa_devices, tmp_path / "mic.raw", frames, rate=16000, fmt="S16_LE",
                       mics=order, reference=4)
    got = _read(_backend(loop, keep_mics=True, **options))
    for k, captured in enumerate(got):
        span = frames[k * P : (k + 1) * P]
        assert captured.mics is not None
        for column, channel in enumerate(order):
            assert np.array_equal(captured.mics[:, column], span[:, channel].astype(np.int16))
        # The hardware loopback of the same period: the same samples' time.
        assert captured.loopback is not None
        assert np.array_equal(captured.loopback, span[:, 4].astype(np.int16))
        assert np.array_equal(captured.mic, np.rint(span[:, list(order)].mean(axis=1)))


@pytest.mark.parametrize("loop", LOOPS)
# 22.05 kHz: 220 frames per read give 159 or 160 samples, so periods are re-cut.
@pytest.mark.parametrize(("rate", "fmt"), [(16000, "S32_LE"), (48000, "S16_LE"), (48000, "S32_LE"),
                                           (22050, "S16_LE")])
def test_each_column_is_the_conversion_of_its_channel_alone(
        alsa_devices: AlsaDevices, tmp_path: Path, loop: str, rate: int, fmt: str) -> None:
    mics = (2, 0, 3, 1)
    frames = _noise(rate // 100 * (PERIODS + 20), 4, fmt, seed=rate + len(fmt))
    options = _options(alsa_devices, tmp_path / "mic.raw", frames, rate=rate, fmt=fmt, mics=mics)
    got = _read(_backend(loop, keep_mics=True, **options))
    assert all(c.mics is not None and c.mics.dtype == np.float32 and c.mics.shape == (P, 4)
               for c in got)
    columns = np.concatenate([c.mics for c in got if c.mics is not None]).astype(np.float64)
    for column, channel in enumerate(mics):
        alone = np.concatenate([c.mic for c in _read(_backend(loop, **{
            **options, "mic_channels": (channel,)}))]).astype(np.float64)
        # The same filter on the same samples: the column rounds to the mono conversion,
        # and keeps what lies below 16 bits instead of rounding it.
        assert np.array_equal(np.rint(columns[:, column]), alone)
        assert np.max(np.abs(columns[:, column] - alone)) <= 0.5 + 1e-3
        assert np.any(columns[:, column] != alone)
    mix = np.concatenate([c.mic for c in got])
    assert np.array_equal(mix, np.concatenate([c.mic for c in _read(_backend(loop, **options))]))
    assert np.max(np.abs(mix - columns.mean(axis=1))) <= 0.5 + 1e-2


@pytest.mark.parametrize("loop", LOOPS)
def test_at_48k_the_columns_the_mix_and_the_loopback_share_one_delay(
        alsa_devices: AlsaDevices, tmp_path: Path, loop: str) -> None:
    rate, delay = 48000, 3  # channel 1 hears the source one 16 kHz sample later
    source = _noise(rate // 100 * (PERIODS + 20) + delay, 1, "S16_LE", seed=11)[:, 0]
    frames = np.zeros((len(source) - delay, 6), np.int64)
    frames[:, 0] = frames[:, 2] = frames[:, 5] = source[delay:]
    frames[:, 1] = source[:-delay]
    frames[:, 3] = source[delay:] // 2
    options = _options(alsa_devices, tmp_path / "mic.raw", frames, rate=rate, fmt="S16_LE",
                       mics=(0, 1, 2, 3), reference=5)
    got = _read(_backend(loop, keep_mics=True, **options))
    columns = np.concatenate([c.mics for c in got if c.mics is not None])
    assert len(columns) == PERIODS * P
    # The same signal on two channels stays the same sample for sample.
    assert np.array_equal(columns[:, 0], columns[:, 2])
    # Three samples later at 48 kHz in, one sample later out (past the filter's start-up,
    # where channel 0 has less history than channel 1).
    assert np.max(np.abs(columns[P + 1 :, 1] - columns[P:-1, 0])) <= 1e-2
    assert not np.allclose(columns[:, 1], columns[:, 0], atol=1.0)
    # The loopback channel carries channel 0's signal: it comes out as that column, rounded.
    loopback = np.concatenate([c.loopback for c in got if c.loopback is not None])
    assert np.array_equal(loopback, np.rint(columns[:, 0]))
    mix = np.concatenate([c.mic for c in got])
    assert np.max(np.abs(mix - columns.astype(np.float64).mean(axis=1))) <= 0.5 + 1e-2


@pytest.mark.parametrize("loop", LOOPS)
def test_one_mic_keeps_no_columns_and_the_direct_path(alsa_devices: AlsaDevices, tmp_path: Path,
                                                      loop: str) -> None:
    frames = ramp_channels((PERIODS + 20) * P, 1)
    options = _options(alsa_devices, tmp_path / "mic.raw", frames, rate=16000, fmt="S16_LE", mics=(0,))
    backend = _backend(loop, keep_mics=True, **options)
    assert not backend.keep_mics
    with backend:
        first = backend.read_raw()
        rest = [backend.read() for _ in range(5)]
    if loop == "python":  # 16 kHz mono S16 on pyalsaaudio: the device's bytes, as before
        assert isinstance(first, bytes)
    assert all(c.mics is None for c in rest)


@pytest.mark.parametrize("loop", LOOPS)
async def test_duplex_frames_carry_every_mic(alsa_devices: AlsaDevices, tmp_path: Path,
                                             loop: str) -> None:
    order = (3, 1, 0, 2)
    frames = ramp_channels((PERIODS + 20) * P, 5)
    options = _options(alsa_devices, tmp_path / "mic.raw", frames, rate=16000, fmt="S16_LE",
                       mics=order, reference=4)
    backend = open_alsa_backend(P, loop=loop, keep_mics=True, paced=False, **options)
    assert isinstance(backend, RtAlsaBackend) == (loop == "c")
    duplex = DuplexLoop(backend, Speaker(P), queue_periods=8)
    duplex.start(asyncio.get_running_loop())
    got = []
    async for frame in duplex.frames():
        got.append(frame)
        if len(got) == PERIODS:
            break
    duplex.stop()
    assert [f.index for f in got] == list(range(PERIODS))
    for frame in got:
        span = frames[frame.index * P : (frame.index + 1) * P]
        assert frame.mics is not None
        assert np.array_equal(frame.mics, span[:, list(order)].astype(np.int16))
        assert np.array_equal(frame.reference, span[:, 4].astype(np.int16))


@pytest.mark.parametrize("loop", LOOPS)
async def test_duplex_frames_carry_resampled_mics_as_read(alsa_devices: AlsaDevices, tmp_path: Path,
                                                          loop: str) -> None:
    frames = _noise(480 * (PERIODS + 20), 4, "S32_LE", seed=7)
    options = _options(alsa_devices, tmp_path / "mic.raw", frames, rate=48000, fmt="S32_LE",
                       mics=(1, 2, 3))
    expected = _read(_backend(loop, keep_mics=True, **options))
    duplex = DuplexLoop(_backend(loop, keep_mics=True, **options), Speaker(P), queue_periods=8)
    duplex.start(asyncio.get_running_loop())
    got = []
    async for frame in duplex.frames():
        got.append(frame)
        if len(got) == PERIODS:
            break
    duplex.stop()
    for frame, captured in zip(got, expected, strict=True):
        assert frame.mics is not None and captured.mics is not None
        assert frame.mics.dtype == np.float32
        assert np.array_equal(frame.mics, captured.mics)
        assert np.array_equal(frame.mic, captured.mic)
