"""Pure parts of the ESPHome surface: media decoding, timers, the LED ring's countdown."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest

from edgevoice.device.esphome import media
from edgevoice.device.esphome.timers import Timer, TimerEvent, Timers, is_stop
from edgevoice.device.hardware.ledring import AMBER, OFF, countdown_colors


def tone(rate: int, seconds: float = 0.5, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return 0.5 * np.sin(2 * np.pi * freq * t)


def wav_bytes(samples: np.ndarray, rate: int, width: int, channels: int) -> bytes:
    frames = np.repeat(samples[:, None], channels, axis=1)
    if width == 1:
        raw = np.round(frames * 127 + 128).astype(np.uint8).tobytes()
    elif width == 2:
        raw = np.round(frames * 32767).astype("<i2").tobytes()
    elif width == 3:
        ints = np.round(frames * (2**23 - 1)).astype("<i4").reshape(-1)
        raw = b"".join(int(v).to_bytes(3, "little", signed=True) for v in ints)
    else:
        raw = np.round(frames * (2**31 - 1)).astype("<i4").tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(raw)
    return out.getvalue()


@pytest.mark.parametrize(("rate", "width", "channels"), [(16000, 2, 1), (44100, 2, 2), (22050, 1, 1),
                                                         (48000, 3, 2), (8000, 4, 1)])
def test_wav_of_any_pcm_shape_becomes_16k_mono(rate: int, width: int, channels: int) -> None:
    pcm = media.decode(wav_bytes(tone(rate), rate, width, channels))
    assert pcm.dtype == np.int16 and abs(len(pcm) - 8000) <= 2
    # The tone survives: its level (0.5 full scale, RMS 0.354) and its pitch.
    assert abs(np.sqrt(np.mean((pcm / 32768.0) ** 2)) - 0.354) < 0.02
    spectrum = np.abs(np.fft.rfft(pcm))
    assert abs(np.argmax(spectrum) * 16000 / len(pcm) - 440) < 5


@pytest.mark.parametrize("fmt", ["FLAC", "MP3", "OGG"])
def test_compressed_media_decodes_through_soundfile(fmt: str) -> None:
    soundfile = pytest.importorskip("soundfile")
    out = io.BytesIO()
    soundfile.write(out, tone(24000, 1.0), 24000, format=fmt)
    pcm = media.decode(out.getvalue(), f"x.{fmt.lower()}")
    assert abs(len(pcm) - 16000) < 1600  # MP3 pads its frames
    assert np.abs(pcm).max() > 8000


def test_what_cannot_be_decoded_says_so() -> None:
    with pytest.raises(media.MediaError, match="cannot decode"):
        media.decode(b"this is not audio at all", "note.txt")


def test_timers_track_the_soonest_and_ring_until_stopped() -> None:
    timers = Timers()
    timers.update(TimerEvent.STARTED, Timer("a", "tea", 60, 60, True, at=0.0))
    timers.update(TimerEvent.STARTED, Timer("b", "eggs", 100, 20, True, at=0.0))
    assert timers.fraction_left(10.0) == pytest.approx(0.1)  # eggs: 10 of 100 s left
    timers.update(TimerEvent.CANCELLED, Timer("b", "eggs", 100, 0, False, at=10.0))
    assert timers.fraction_left(30.0) == pytest.approx(0.5)
    timers.update(TimerEvent.FINISHED, Timer("a", "tea", 60, 0, False, at=60.0))
    assert timers.is_ringing and timers.fraction_left(60.0) is None
    assert timers.stop_ringing() == ["a"] and not timers.is_ringing


def test_stop_phrases() -> None:
    assert is_stop("stop", ("stop",))
    assert is_stop("okay stop it", ("stop",))
    assert not is_stop("what is my name", ("stop",))
    assert is_stop("turn it off", ("stop", "turn off"))
    assert not is_stop("anything", ("", " "))


def test_the_ring_shows_the_fraction_left() -> None:
    assert countdown_colors(1.0, 12) == [AMBER] * 12
    assert countdown_colors(0.5, 12) == [AMBER] * 6 + [OFF] * 6
    assert countdown_colors(0.01, 12) == [AMBER] + [OFF] * 11  # the last LED stays until the end
    assert countdown_colors(0.0, 12) == [OFF] * 12
