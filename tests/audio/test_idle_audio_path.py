"""The idle audio path: what the duplex loop does 100 times a second while nothing plays
(the speaker's shared silent period, the ALSA backend's mono pass-through and its
converted-once silence), against real alsa-lib PCMs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from support.alsa_devices import AlsaDevices, install_alsa_devices, read_raw, write_raw

from edgevoice.audio.io.alsa import AlsaBackend
from edgevoice.audio.io.duplex import DuplexLoop
from edgevoice.audio.speaking.playback import Speaker

P = 160


@pytest.fixture
def alsa_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AlsaDevices:
    return install_alsa_devices(tmp_path, monkeypatch)


def _ramp(frames: int) -> np.ndarray:
    return ((np.arange(frames) * 7) % 60000 - 30000).astype(np.int16)


def test_idle_speaker_returns_one_read_only_silent_period_and_keeps_the_clock() -> None:
    speaker = Speaker(P)
    first, second = speaker.next_period(), speaker.next_period()
    assert first is second is speaker.silence
    assert not np.any(first) and first.dtype == np.int16 and len(first) == P
    with pytest.raises(ValueError):
        first[0] = 1  # read-only: nobody downstream can turn the silence into sound
    speaker.set_output_latency(P)
    assert speaker.played_position == P  # two periods written, one still in the device
    speaker.enqueue(np.full(P + 10, 7, np.int16), utterance_id="u")
    speech = speaker.next_period()
    assert speech is not speaker.silence and np.all(speech == 7)
    tail = speaker.next_period()
    assert tail is not speaker.silence  # the tail of the segment, then zeros
    assert np.all(tail[:10] == 7) and not np.any(tail[10:])
    # Until the segment has been heard it is still sounding: fresh periods, callbacks.
    finished: list[str] = []
    speaker.on_segment_finished = lambda progress: finished.append(progress.utterance_id)
    assert speaker.next_period() is not speaker.silence
    speaker.set_output_latency(0)
    assert finished == ["u"]
    assert speaker.next_period() is speaker.silence
    assert speaker.played_position == 5 * P


def test_mono_16k_capture_is_handed_over_bit_exact(alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    frames = _ramp(40 * P)
    mic = write_raw(tmp_path / "mic.raw", frames[:, None])
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 1), playback_device=alsa_devices.null,
                          paced=False)
    with backend:
        periods = [backend.read().mic for _ in range(40)]
    assert all(p.dtype == np.int16 and p.shape == (P,) for p in periods)
    assert np.array_equal(np.concatenate(periods), frames)


def test_repeated_silence_and_sound_reach_the_speaker_sample_for_sample(
        alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    silence_in = write_raw(tmp_path / "mic.raw", np.zeros((40 * P, 1), np.int16))
    out = tmp_path / "spk.raw"
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(silence_in, 1),
                          playback_device=alsa_devices.speaker(out), prefill_periods=0, paced=False)
    speaker = Speaker(P)
    tone = _ramp(3 * P)
    writable = np.full(P, 5, np.int16)
    sent = []
    with backend:
        for k in range(12):
            backend.read()
            if k == 4:
                speaker.enqueue(tone, utterance_id="u")
            pcm = writable if k == 9 else speaker.next_period()
            if k == 10:
                writable[:] = 6  # the same array again, changed: must be written as it is now
                pcm = writable
            backend.write(pcm)
            sent.append(pcm.copy())
            speaker.set_output_latency(0)
    assert np.array_equal(read_raw(out), np.concatenate(sent))
    assert np.array_equal(np.concatenate(sent[4:7]), tone)
    assert np.all(sent[10] == 6)


def test_stereo_48k_speaker_gets_the_idle_silence_on_every_channel(
        alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    silence_in = write_raw(tmp_path / "mic.raw", np.zeros((40 * P, 1), np.int16))
    out = tmp_path / "spk.raw"
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(silence_in, 1), playback_rate=48000,
                          playback_channels=2, playback_device=alsa_devices.speaker(out, 2, 48000),
                          prefill_periods=0, paced=False)
    speaker = Speaker(P)
    tone = np.full(2 * P, 3000, np.int16)
    with backend:
        for k in range(20):
            backend.read()
            if k == 5:
                speaker.enqueue(tone, utterance_id="u")
            backend.write(speaker.next_period())
            speaker.set_output_latency(0)
    played = read_raw(out, 2)
    assert np.array_equal(played[:, 0], played[:, 1])
    assert not np.any(played[: 5 * 3 * P - 100])  # silence before the tone (minus the filter)
    assert np.max(played[5 * 3 * P : 7 * 3 * P + 100, 0]) > 2500  # the tone itself
    assert np.max(np.abs(played[9 * 3 * P :, 0])) < 50  # then silence again: the filter's tail died


async def test_idle_duplex_frames_carry_the_shared_silence_as_reference(
        alsa_devices: AlsaDevices, tmp_path: Path) -> None:
    frames = _ramp(60 * P)
    mic = write_raw(tmp_path / "mic.raw", frames[:, None])
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 1),
                          playback_device=alsa_devices.speaker(tmp_path / "o.raw"), paced=False)
    speaker = Speaker(P)
    duplex = DuplexLoop(backend, speaker, queue_periods=8)
    duplex.start(asyncio.get_running_loop())
    got = []
    async for frame in duplex.frames():
        got.append(frame)
        if len(got) == 30:
            break
    duplex.stop()
    assert [f.index for f in got] == list(range(30))
    assert all(f.reference is speaker.silence for f in got)
    assert np.array_equal(np.concatenate([f.mic for f in got]), frames[: 30 * P])


def test_read_raw_hands_over_bytes_only_for_16k_mono_s16(alsa_devices: AlsaDevices,
                                                        tmp_path: Path) -> None:
    mono = write_raw(tmp_path / "mono.raw", _ramp(10 * P)[:, None])
    direct = AlsaBackend(P, capture_device=alsa_devices.mic(mono, 1), playback_device=alsa_devices.null,
                         paced=False)
    with direct:
        raw = direct.read_raw()
        assert isinstance(raw, bytes) and len(raw) == 2 * P
        assert np.array_equal(np.frombuffer(raw, np.int16), _ramp(P))
    two = np.stack([_ramp(10 * P), -_ramp(10 * P)], axis=1)
    stereo = write_raw(tmp_path / "two.raw", two)
    picked = AlsaBackend(P, capture_device=alsa_devices.mic(stereo, 2), capture_channels=2,
                         mic_channels=(1,), playback_device=alsa_devices.null, paced=False)
    with picked:
        captured = picked.read_raw()
        assert not isinstance(captured, bytes)
        assert np.array_equal(captured.mic, two[:P, 1])


def test_a_consumer_thread_takes_the_same_frames_in_batches(alsa_devices: AlsaDevices,
                                                            tmp_path: Path) -> None:
    frames = _ramp(60 * P)
    mic = write_raw(tmp_path / "mic.raw", frames[:, None])
    backend = AlsaBackend(P, capture_device=alsa_devices.mic(mic, 1),
                          playback_device=alsa_devices.speaker(tmp_path / "o.raw"), paced=False)
    speaker = Speaker(P)
    speaker.enqueue(np.full(3 * P, 9, np.int16), utterance_id="u")
    duplex = DuplexLoop(backend, speaker, queue_periods=8)
    loop = asyncio.new_event_loop()  # unused by take(); start() wants one for events
    duplex.start(loop)
    got: list = []
    try:
        while len(got) < 40:
            batch = duplex.take(2.0, at_least=4)
            assert batch, "the audio thread stopped handing over frames"
            got.extend(batch)
    finally:
        duplex.stop()
        loop.close()
    assert [f.index for f in got] == list(range(len(got)))
    assert np.array_equal(np.concatenate([f.mic for f in got]), frames[: len(got) * P])
    assert all(np.all(f.reference == 9) for f in got[:3])  # what was written, period by period
    assert all(f.reference is speaker.silence for f in got[4:])
