"""The ALSA edge's streaming resampler: smooth periods, no aliasing, known delay."""

from __future__ import annotations

import numpy as np
import pytest

from edgevoice.audio.frames import dbfs
from edgevoice.audio.io.resample_polyphase import PolyphaseResampler

RATES = [(48000, 16000), (44100, 16000), (32000, 16000), (22050, 16000), (8000, 16000),
         (16000, 48000), (16000, 44100), (16000, 22050)]


def _tone(freq: float, rate: int, seconds: float = 1.0, level_db: float = -6.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return np.rint(np.sin(2 * np.pi * freq * t) * 10 ** (level_db / 20) * np.sqrt(2) * 32767).astype(np.int16)


def _stream(resampler: PolyphaseResampler, signal: np.ndarray, chunk: int) -> np.ndarray:
    return np.concatenate([resampler.process(signal[i : i + chunk]) for i in range(0, len(signal), chunk)])


@pytest.mark.parametrize(("src", "dst"), RATES)
def test_each_period_in_gives_its_period_out(src: int, dst: int) -> None:
    resampler = PolyphaseResampler(src, dst)
    sizes = [len(resampler.process(np.zeros(src // 100, np.int16))) for _ in range(20)]
    assert abs(sum(sizes) - 20 * (src // 100) * dst / src) < 1
    assert max(sizes) - min(sizes) <= 1  # never bursts, never starves


@pytest.mark.parametrize(("src", "dst"), RATES)
def test_streaming_equals_one_shot_and_keeps_frequency_and_level(src: int, dst: int) -> None:
    tone = _tone(1000.0, src)
    streamed = _stream(PolyphaseResampler(src, dst), tone, src // 100)
    assert np.array_equal(streamed, PolyphaseResampler(src, dst).process(tone))
    steady = streamed[dst // 10 :]
    spectrum = np.abs(np.fft.rfft(steady[: dst // 2] * np.hanning(dst // 2)))
    assert np.argmax(spectrum) * 2 == 1000
    assert dbfs(steady) == pytest.approx(-6.0, abs=0.05)


@pytest.mark.parametrize("src", [48000, 44100, 32000])
def test_nothing_above_the_new_nyquist_folds_back(src: int) -> None:
    for freq in (8500.0, 10000.0, 15000.0):
        out = _stream(PolyphaseResampler(src, 16000), _tone(freq, src, level_db=-4.0), src // 100)
        assert dbfs(out[1600:]) < -79.0  # 75 dB below the tone


def test_upsampling_leaves_no_images() -> None:
    out = _stream(PolyphaseResampler(16000, 48000), _tone(1000.0, 16000), 160)
    spectrum = np.abs(np.fft.rfft(out[4800:28800]))
    freqs = np.fft.rfftfreq(24000, 1 / 48000)
    above = spectrum[freqs > 8500].max() / spectrum.max()
    assert 20 * np.log10(above) < -75.0


def test_delay_is_the_reported_one() -> None:
    resampler = PolyphaseResampler(48000, 16000)
    impulse = np.zeros(4800, np.int16)
    impulse[2400] = 30000
    out = resampler.process(impulse)
    peak_s = int(np.argmax(np.abs(out))) / 16000
    assert peak_s - 2400 / 48000 == pytest.approx(resampler.delay_s, abs=1 / 16000)
    assert resampler.delay_s < 0.003


def test_several_channels_convert_like_each_alone() -> None:
    rng = np.random.default_rng(2)
    both = (rng.standard_normal((4800, 2)) * 3000).astype(np.int16)
    together = _stream(PolyphaseResampler(48000, 16000, channels=2), both, 480)
    for channel in (0, 1):
        alone = _stream(PolyphaseResampler(48000, 16000), np.ascontiguousarray(both[:, channel]), 480)
        assert np.array_equal(together[:, channel], alone)
