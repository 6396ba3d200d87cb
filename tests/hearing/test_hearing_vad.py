"""VAD + endpointer on synthesized speech placed at known times (the real Silero model)."""

from __future__ import annotations

import numpy as np
import pytest
from support.hearing_audio import frames, noise, piper_speech, place, rms_dbfs

from edgevoice.audio.hearing.endpoint import Endpointer, EndpointSettings, EndReason, SpeechStarted, TurnEnd
from edgevoice.audio.hearing.vad import QuietGate, SpeechGate, VoiceActivity
from edgevoice.audio.hearing.vad_energy import EnergyVad
from edgevoice.audio.hearing.vad_silero import SileroVad
from edgevoice.models import ModelKind, resolve_model

SENTENCES = (
    "The weather today is sunny with a light breeze from the west.",
    "Please remind me to buy milk tomorrow morning.",
)
END_SILENCE_MS = 600


@pytest.fixture(scope="module")
def silero_path() -> str:
    return str(resolve_model("silero-vad", ModelKind.VAD).path)


def run(vad: VoiceActivity, audio: np.ndarray, settings: EndpointSettings) -> list[SpeechStarted | TurnEnd]:
    endpointer = Endpointer(settings)
    events: list[SpeechStarted | TurnEnd] = []
    for frame in frames(audio):
        for window in vad.process(frame):
            events.extend(endpointer.push(window.pcm, window.speech).events)
    return events


@pytest.mark.parametrize("snr_db", [None, 40.0, 20.0])
@pytest.mark.parametrize("sentence", SENTENCES)
def test_silero_finds_onset_and_end_of_turn(silero_path: str, sentence: str, snr_db: float | None) -> None:
    speech = piper_speech(sentence)
    scene = place([(1.3, speech)], 1.3 + len(speech) / 16000 + 2.0, snr_db=snr_db, seed=3)
    (onset, offset), = scene.spans
    events = run(VoiceActivity(SileroVad(silero_path)), scene.audio,
                 EndpointSettings(end_silence_ms=END_SILENCE_MS))
    assert [type(e) for e in events] == [SpeechStarted, TurnEnd], events
    start, end = events
    assert isinstance(start, SpeechStarted) and isinstance(end, TurnEnd)
    assert abs(start.start_s - onset) <= 0.100
    assert end.reason == EndReason.SILENCE
    assert end.detected_s - offset <= (END_SILENCE_MS + 150) / 1000
    assert end.detected_s > offset  # never cut before the speech ended
    # The turn's audio holds the whole utterance, pre-roll included.
    assert end.audio_start_s <= onset
    assert end.audio_start_s + len(end.audio) / 16000 >= offset


def test_two_utterances_are_two_turns(silero_path: str) -> None:
    a, b = (piper_speech(s) for s in SENTENCES)
    scene = place([(0.5, a), (0.5 + len(a) / 16000 + 1.5, b)], 12.0, snr_db=40.0, seed=4)
    events = run(VoiceActivity(SileroVad(silero_path)), scene.audio, EndpointSettings())
    starts = [e.start_s for e in events if isinstance(e, SpeechStarted)]
    assert len(starts) == 2
    for found, (onset, _) in zip(starts, scene.spans, strict=True):
        assert abs(found - onset) <= 0.100


@pytest.mark.parametrize("extra_db", [0.0, 15.0])
def test_no_turn_from_noise_alone(silero_path: str, extra_db: float) -> None:
    """Noise 40 dB under the test sentences' level (as in the SNR scenes), and 15 dB louder."""
    level = rms_dbfs(np.concatenate([piper_speech(s) for s in SENTENCES])) - 40.0 + extra_db
    events = run(VoiceActivity(SileroVad(silero_path)), noise(15.0, level, seed=5), EndpointSettings())
    assert events == []


def test_silero_probability_separates_speech_from_silence(silero_path: str) -> None:
    vad = VoiceActivity(SileroVad(silero_path))
    speech = piper_speech(SENTENCES[1])
    silent = [w.probability for w in vad.process(np.zeros(16000, dtype=np.int16))]
    spoken = [w.probability for w in vad.process(speech)]
    assert max(silent) < 0.1
    assert np.mean(spoken) > 0.7
    # reset() forgets the stream: same audio, same scores
    vad.reset()
    again = [w.probability for w in vad.process(np.zeros(16000, dtype=np.int16))]
    assert again == pytest.approx(silent, abs=1e-6)


def test_windows_cover_the_stream_exactly(silero_path: str) -> None:
    vad = VoiceActivity(SileroVad(silero_path))
    audio = piper_speech(SENTENCES[0])[:16000]
    windows = [w for f in frames(audio, 333) for w in vad.process(f)]
    assert [w.start_sample for w in windows] == list(range(0, 512 * len(windows), 512))
    np.testing.assert_array_equal(np.concatenate([w.pcm for w in windows]), audio[: 512 * len(windows)])


def test_gate_hysteresis() -> None:
    gate = SpeechGate(threshold=0.5, release_threshold=0.3)
    assert [gate.update(p) for p in (0.4, 0.5, 0.4, 0.31, 0.29, 0.45, 0.6)] == [
        False, True, True, True, False, False, True
    ]
    with pytest.raises(ValueError):
        SpeechGate(threshold=0.4, release_threshold=0.5)


def test_energy_vad_finds_speech_in_quiet_noise() -> None:
    speech = piper_speech(SENTENCES[1])
    scene = place([(2.0, speech)], 2.0 + len(speech) / 16000 + 2.0, snr_db=40.0, seed=7)
    events = run(VoiceActivity(EnergyVad(), threshold=0.5, release_threshold=0.3), scene.audio,
                 EndpointSettings(end_silence_ms=END_SILENCE_MS))
    (onset, offset), = scene.spans
    starts = [e for e in events if isinstance(e, SpeechStarted)]
    ends = [e for e in events if isinstance(e, TurnEnd)]
    assert len(starts) == 1 and len(ends) == 1
    assert abs(starts[0].start_s - onset) <= 0.100
    assert ends[0].detected_s - offset <= (END_SILENCE_MS + 150) / 1000
    assert run(VoiceActivity(EnergyVad()), noise(10.0, -60.0, seed=8), EndpointSettings()) == []


def test_quiet_gate_learns_a_steady_floor_and_opens_on_a_rise() -> None:
    gate = QuietGate(6.0, hangover_windows=3, rise_db_per_s=1.0)
    # a new stream: the model scores while the gate learns the room
    assert [gate.score(-60.0) for _ in range(4)] == [True, True, False, False]
    assert gate.floor == -60.0
    assert gate.score(-57.0) is False  # 3 dB above the floor: the same room
    assert gate.score(-52.0) is True  # 8 dB: something happened
    assert [gate.score(-60.0) for _ in range(3)] == [True, True, False]  # the hangover
    gate.keep_open()  # the model heard speech: keep listening
    assert gate.score(-60.0) is True
    # a hum that comes on is learnt at 1 dB/s: it opens the gate, then the floor catches up
    opened = [gate.score(-45.0) for _ in range(1000)]
    assert opened[0] and not opened[-1]
    assert gate.floor == pytest.approx(-45.0)
    with pytest.raises(ValueError, match="open_db"):
        QuietGate(0.0)


@pytest.mark.parametrize("snr_db", [60.0, 30.0])
def test_the_quiet_gate_spares_the_model_and_finds_the_same_turn(silero_path: str, snr_db: float) -> None:
    speech = piper_speech(SENTENCES[0])
    scene = place([(4.0, speech)], 4.0 + len(speech) / 16000 + 3.0, snr_db=snr_db, seed=7)
    plain = VoiceActivity(SileroVad(silero_path))
    gated = VoiceActivity(SileroVad(silero_path), quiet=QuietGate(6.0))
    gated.economy = True
    settings = EndpointSettings(end_silence_ms=END_SILENCE_MS)
    expected, found = run(plain, scene.audio, settings), run(gated, scene.audio, settings)
    assert [type(e) for e in found] == [SpeechStarted, TurnEnd] == [type(e) for e in expected]
    assert abs(found[0].start_s - expected[0].start_s) <= 0.032 + 1e-9  # at most one window later
    assert isinstance(found[1], TurnEnd) and isinstance(expected[1], TurnEnd)
    assert abs(found[1].detected_s - expected[1].detected_s) <= 0.064 + 1e-9
    windows = len(scene.audio) // 512
    speech_windows = len(speech) // 512
    # the silent 4 s before and 3 s after (minus a settling second and the hangovers) went unscored
    assert gated.skipped >= (windows - speech_windows) * 0.6, (gated.skipped, windows)
    assert plain.skipped == 0


def test_without_economy_the_quiet_gate_scores_everything(silero_path: str) -> None:
    vad = VoiceActivity(SileroVad(silero_path), quiet=QuietGate(6.0))
    quiet_room = noise(3.0, -60.0, seed=2)
    for frame in frames(quiet_room):
        vad.process(frame)
    assert vad.skipped == 0
    vad.economy = True
    for frame in frames(quiet_room):
        vad.process(frame)
    assert vad.skipped > 80  # of 93 windows


def test_a_companion_signal_rides_along_window_by_window() -> None:
    vad = VoiceActivity(EnergyVad())
    vad.engine.window_samples = 512  # windows that straddle 100-sample frames (it scores any length)
    scored = np.arange(3000, dtype=np.int16)
    heard = (-scored).astype(np.int16)
    windows = []
    for start in range(0, 3000, 100):
        end = start + 100
        # frames 5..7 come without a companion: their own samples stand in
        companion = None if 500 <= start < 800 else heard[start:end]
        windows.extend(vad.process(scored[start:end], companion))
    assert [w.start_sample for w in windows] == [0, 512, 1024, 1536, 2048]
    expected = heard.copy()
    expected[500:800] = scored[500:800]
    for w in windows:
        assert np.array_equal(w.pcm, scored[w.start_sample:w.start_sample + 512])
        assert np.array_equal(w.turn_audio, expected[w.start_sample:w.start_sample + 512])
    plain = VoiceActivity(EnergyVad()).process(scored[:160])[0]
    assert plain.heard is None and plain.turn_audio is plain.pcm
    with pytest.raises(ValueError, match="companion"):
        vad.process(scored[:100], heard[:50])
