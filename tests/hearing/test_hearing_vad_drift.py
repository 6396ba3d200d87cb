"""Silero's state reset against drift over a long stream (audio/hearing/vad_silero.py, "State
drift"): the reset does not cost the onset of a person talking over the device (the
echo canceller's output in the simulated room: the device talks for 20 s, then a person
over it), and it happens exactly after ``state_reset_s`` of quiet. The drift itself is
path-dependent (it showed in the daemon's recordings, 11-23 windows late, not in this
short scene): ``bench/bargein_daemon.py`` measures it through the whole daemon."""

from __future__ import annotations

import numpy as np
import pytest
from support.hearing_audio import espeak_speech, piper_speech, rms_dbfs

from edgevoice.audio.aec.engine import EdgevoiceCanceller
from edgevoice.audio.hearing.vad import VadError
from edgevoice.audio.hearing.vad_silero import WINDOW, SileroVad, reset_windows
from edgevoice.audio.io.room import SimulatedRoom
from edgevoice.models import ModelKind, resolve_model

PERIOD = 160
REPLY = ("Once upon a time, in a small village by the sea, there lived an old fisherman. "
         "Every morning he rowed out before the sun rose, and every evening he came home "
         "with a story for his grandchildren about the fish that got away.")


@pytest.fixture(scope="module")
def double_talk() -> tuple[np.ndarray, int]:
    """The canceller's output: 20 s of the device talking alone, then a person over it
    at 7 dB below the echo. Returns (output, the person's onset in samples)."""
    reply = piper_speech(REPLY)
    reply = np.tile(reply, int(np.ceil(24 * 16000 / len(reply))))[: 24 * 16000]
    room = SimulatedRoom(PERIOD, speed=0.0, echo_gain_db=-10, echo_delay_ms=20, rt60_s=0.25, seed=3)
    person = espeak_speech("Hold on, what is your name?", "en-gb-x-rp", 160)
    onset = 20 * 16000
    echo_dbfs = rms_dbfs(reply) - 10.0
    room.add_talker(person, start_s=onset / 16000, gain_db=echo_dbfs - 7.0 - rms_dbfs(person))
    canceller = EdgevoiceCanceller()
    room.open()
    out = np.zeros(len(reply), dtype=np.int16)
    try:
        for i in range(0, len(reply), PERIOD):
            mic = room.read().mic
            ref = reply[i:i + PERIOD]
            room.write(ref)
            out[i:i + PERIOD] = canceller.process(mic, ref)
    finally:
        room.close()
    return out, onset + PERIOD  # the canceller's output is one period late


def windows_to_speech(engine: SileroVad, audio: np.ndarray, onset: int) -> int | None:
    """Windows after the onset until the person is scored as speech (0.5)."""
    for start in range(0, len(audio) - WINDOW + 1, WINDOW):
        probability = engine.probability(audio[start:start + WINDOW])
        if start + WINDOW > onset and probability >= 0.5:
            return (start + WINDOW - onset) // WINDOW
    return None


def test_a_stream_that_heard_the_device_for_20_s_scores_the_person_at_once(
        double_talk: tuple[np.ndarray, int]) -> None:
    audio, onset = double_talk
    path = resolve_model("silero-vad", ModelKind.VAD).path
    late = windows_to_speech(SileroVad(path), audio, onset)
    # a stream started just before the person: how fast the model can be on this audio
    fresh = windows_to_speech(SileroVad(path), audio[onset - 16000:], 16000)
    assert fresh is not None and fresh <= 3
    assert late is not None and late <= fresh + 1


def test_the_state_is_zeroed_after_state_reset_s_of_quiet_and_only_then() -> None:
    engine = SileroVad(resolve_model("silero-vad", ModelKind.VAD).path, state_reset_s=1.0)
    quiet = (np.random.default_rng(2).standard_normal(WINDOW) * 30).astype(np.int16)  # -60 dBFS noise
    for _ in range(engine.reset_after - 1):
        assert engine.probability(quiet) < 0.1
        assert engine._state.any()  # the model's recurrent state, carried on
    engine.probability(quiet)
    assert not engine._state.any()  # 31 quiet windows: zeroed
    never = SileroVad(resolve_model("silero-vad", ModelKind.VAD).path, state_reset_s=0.0)
    for _ in range(100):
        never.probability(quiet)
        assert never._state.any()


def test_the_reset_interval_is_in_windows_and_refuses_negative_times() -> None:
    assert reset_windows(1.0) == 31  # 32 ms windows
    assert reset_windows(0.0) == 0
    with pytest.raises(VadError, match="state_reset_s"):
        reset_windows(-1.0)
