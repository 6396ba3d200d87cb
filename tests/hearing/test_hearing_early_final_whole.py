"""A person who pauses mid-sentence past the early final (``[asr] early_final_ms``) goes on
in the same turn. Moonshine decodes whole windows: the second half decoded on its own lost
its words ("tomorrow" read "demaril"), so for a recognizer that ``hears_whole_turn`` the
session after the pause hears the whole turn again (pocketsphinx, which streams, keeps its
pieces: tests/hearing/test_hearing_early_final.py)."""

from __future__ import annotations

from typing import Any

import pytest
from support.hearing_audio import piper_speech, place
from support.silero_listener import listen

from edgevoice.audio.frames import SAMPLE_RATE
from edgevoice.audio.hearing.events import EarlyTranscript, FinalTranscript, SpeechResumed


@pytest.mark.parametrize(("before", "after", "said"), [
    ("What is the weather like", "tomorrow", "what is the weather like tomorrow"),
    ("Tell me a story", "about a dragon", "tell me a story about a dragon"),
])
def test_moonshine_hears_a_sentence_paused_past_the_early_final_whole(
    moonshine_engine: Any, before: str, after: str, said: str,
) -> None:
    assert moonshine_engine.hears_whole_turn
    first, second = piper_speech(before), piper_speech(after)
    resume_at = 0.8 + len(first) / SAMPLE_RATE + 0.45  # a 450 ms pause: past 300, short of 600
    # 2.5 s after it: the words of a pause are read on a thread while the audio goes in
    # faster than real time, and a pause not yet read ends after the text hold's 1.6 s
    scene = place([(0.8, first), (resume_at, second)], resume_at + len(second) / SAMPLE_RATE + 2.5,
                  snr_db=40.0, seed=5)
    early = listen(moonshine_engine, scene.audio, early_final_ms=300)
    # the pause did end the first session (an early final, then the speech came back)...
    told = [e for e in early if isinstance(e, EarlyTranscript | SpeechResumed)]
    assert [type(e) for e in told] == [EarlyTranscript, SpeechResumed, EarlyTranscript]
    # ...and the turn reads as the sentence, as a single pass at the turn's end reads it
    (final,) = [e for e in early if isinstance(e, FinalTranscript)]
    (at_end,) = [e for e in listen(moonshine_engine, scene.audio, early_final_ms=0)
                 if isinstance(e, FinalTranscript)]
    assert final.text == at_end.text == said
    assert isinstance(told[2], EarlyTranscript) and told[2].result().text == said
    starts = [w.start for w in final.words]
    assert starts == sorted(starts) and starts[0] == pytest.approx(scene.spans[0][0], abs=0.3)
