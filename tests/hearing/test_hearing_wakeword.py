"""The wake word detector with the bundled microWakeWord models, on piper speech."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.hearing_audio import frames, piper_speech, place

from edgevoice.audio.hearing.wakeword import WakeWordDetector, WakeWordError, WakeWordManifest
from edgevoice.models import ModelKind, resolve_model

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

OTHER_SPEECH = (
    "Good morning, the coffee is ready in the kitchen.",
    "Could you tell me how long it takes to drive to the airport?",
    "The meeting has been moved to three thirty this afternoon.",
    "I think we should paint the living room a lighter shade of blue.",
    "Remember to water the plants before you leave for the weekend.",
    "The train to Boston departs from platform number nine.",
    "Okay, let me know when you are ready to go.",
    "My neighbour's dog barks every time the mail arrives.",
    "We need eggs, butter, flour and a little bit of sugar.",
    "The museum is closed on Mondays but open late on Fridays.",
    "A nice cup of tea would be lovely right now.",
    "Turn left at the next corner and then keep going straight.",
    "She plays the piano beautifully, especially the slow pieces.",
    "Is there any chance of rain tomorrow afternoon?",
    "Hey, do you remember where I put my keys?",
    "The children built a sandcastle at the beach yesterday.",
    "Please add bananas and oat milk to the shopping list.",
    "The library has a new section for science fiction books.",
    "Our flight was delayed by almost two hours last night.",
    "Can you play some relaxing music in the bedroom?",
    "The soup needs a bit more salt and some fresh pepper.",
    "Jarvis was the name of a butler in an old comic book.",
    "The football match ended in a draw after extra time.",
    "I would like to book a table for four people at eight.",
    "The sunset over the lake was absolutely breathtaking.",
    "Alexandra and Nadia went hiking in the mountains.",
    "Set the thermostat to twenty one degrees, please.",
    "Nobody knows exactly how old that oak tree is.",
    "The new bakery on the corner sells excellent bread.",
    "We should leave early to avoid the traffic on the bridge.",
    "The weather forecast says it will be sunny and warm all week.",
    "Could you read me the latest news about the election results?",
    "My grandmother makes the best apple pie in the whole county.",
    "The printer upstairs has run out of paper again.",
    "Let's watch a documentary about whales and dolphins tonight.",
    "How many tablespoons are there in a quarter of a cup?",
    "The concert tickets sold out within ten minutes of going on sale.",
    "Please wake me up at half past six tomorrow morning.",
    "The garden looks wonderful now that the roses are blooming.",
    "I can never remember whether it is affect or effect.",
)


@pytest.fixture(scope="module")
def okay_nabu() -> Path:
    return resolve_model("okay_nabu", ModelKind.WAKEWORD).path


def detect(model: Path, audio: np.ndarray, **overrides: float) -> list[float]:
    detector = WakeWordDetector(model, **overrides)  # type: ignore[arg-type]
    return [d.t for f in frames(audio) for d in detector.process(f)]


def talk(sentences: tuple[str, ...], gap_s: float = 0.6) -> np.ndarray:
    pieces = []
    t = 0.5
    for sentence in sentences:
        speech = piper_speech(sentence)
        pieces.append((t, speech))
        t += len(speech) / 16000 + gap_s
    return place(pieces, t + 0.5, snr_db=40.0, seed=11).audio


def test_manifest_gives_the_defaults(okay_nabu: Path) -> None:
    manifest = WakeWordManifest.load(okay_nabu)
    assert manifest.wake_word == "Okay Nabu"
    assert manifest.model_path == okay_nabu
    detector = WakeWordDetector(okay_nabu)
    assert detector.threshold == manifest.probability_cutoff == 0.85
    assert detector.window == manifest.sliding_window_size == 5
    assert detector.refractory_s == 2.0
    overridden = WakeWordDetector(okay_nabu, threshold=0.5, window=3, refractory_s=1.0)
    assert (overridden.threshold, overridden.window, overridden.refractory_s) == (0.5, 3, 1.0)


def test_fires_on_okay_nabu_said_by_piper(okay_nabu: Path) -> None:
    speech = piper_speech("Okay nabu.")
    scene = place([(1.0, speech), (5.0, speech)], 8.0, snr_db=40.0, seed=12)
    times = detect(okay_nabu, scene.audio)
    assert len(times) == 2
    for t, (start, end) in zip(times, scene.spans, strict=True):
        assert start < t <= end + 0.3  # fires by the end of the phrase, not before it began


def test_refractory_period_suppresses_repeats(okay_nabu: Path) -> None:
    speech = piper_speech("Okay nabu.")
    second = 1.0 + len(speech) / 16000 + 1.5  # the next "okay nabu" ~2.2 s after the first
    scene = place([(1.0, speech), (second, speech)], second + 3.0, seed=13)
    # Without a refractory period one utterance fires more than once.
    assert len(detect(okay_nabu, scene.audio, refractory_s=0.0)) > 2
    assert len(detect(okay_nabu, scene.audio)) == 2  # the default 2 s
    assert len(detect(okay_nabu, scene.audio, refractory_s=3.0)) == 1


def test_other_models_stay_quiet_on_okay_nabu() -> None:
    scene = place([(1.0, piper_speech("Okay nabu."))], 4.0, seed=14)
    for name in ("hey_jarvis", "alexa"):
        assert detect(resolve_model(name, ModelKind.WAKEWORD).path, scene.audio) == []


def test_no_false_fire_on_other_speech(okay_nabu: Path) -> None:
    audio = talk(OTHER_SPEECH[:8])
    assert len(audio) / 16000 > 25
    assert detect(okay_nabu, audio) == []


@pytest.mark.slow
def test_no_false_fire_on_two_minutes_of_other_speech(okay_nabu: Path) -> None:
    audio = talk(OTHER_SPEECH)
    assert len(audio) / 16000 >= 120
    for name in ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa"):
        assert detect(resolve_model(name, ModelKind.WAKEWORD).path, audio) == [], name


def test_reset_restarts_the_clock_and_state(okay_nabu: Path) -> None:
    scene = place([(1.0, piper_speech("Okay nabu."))], 4.0, seed=15)
    detector = WakeWordDetector(okay_nabu)
    first = [d.t for f in frames(scene.audio) for d in detector.process(f)]
    detector.reset()
    second = [d.t for f in frames(scene.audio) for d in detector.process(f)]
    assert first == second and len(first) == 1


def test_bad_manifests_are_clear_errors(tmp_path: Path, okay_nabu: Path) -> None:
    with pytest.raises(WakeWordError, match="cannot read"):
        WakeWordDetector(tmp_path / "missing.tflite")
    shutil.copy(okay_nabu, tmp_path / "m.tflite")
    (tmp_path / "m.json").write_text(json.dumps({"model": "m.tflite"}))
    with pytest.raises(WakeWordError, match="not a microWakeWord manifest"):
        WakeWordDetector(tmp_path / "m.tflite")
    with pytest.raises(WakeWordError, match="out of range"):
        WakeWordDetector(okay_nabu, threshold=1.5)
