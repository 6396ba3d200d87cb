from __future__ import annotations

import pytest

from edgevoice.device.runtime.metrics import Mark, RunningPercentiles, TurnTimeline, percentile


def test_stages_are_differences_of_marks_on_the_audio_clock() -> None:
    turn = TurnTimeline("t1")
    for mark, at in [
        (Mark.SPEECH_END, 10.0),
        (Mark.ENDPOINT, 10.6),
        (Mark.ASR_FINAL, 10.65),
        (Mark.REQUEST_SENT, 10.652),
        (Mark.FIRST_TEXT, 10.7),
        (Mark.FIRST_SENTENCE, 10.71),
        (Mark.FIRST_AUDIO, 10.83),
        (Mark.FIRST_PLAYED, 10.86),
    ]:
        turn.mark(mark, at)
    turn.mark(Mark.SPEECH_END, 99.0)  # a later mark of the same kind does not move it
    stages = turn.stages_ms()
    assert stages["endpoint"] == pytest.approx(600.0)
    assert stages["asr_final"] == pytest.approx(50.0)
    assert stages["tts_first_audio"] == pytest.approx(120.0)
    assert stages["voice_to_voice"] == pytest.approx(860.0)
    assert "interrupt_to_silence" not in stages
    assert turn.as_event()["marks_s"]["speech_end"] == 10.0  # type: ignore[index]


def test_percentiles() -> None:
    assert percentile([1.0], 95) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0
    assert percentile(list(map(float, range(101))), 95) == pytest.approx(95.0)
    with pytest.raises(ValueError):
        percentile([], 50)
    running = RunningPercentiles(window=3)
    for value in (100.0, 200.0, 300.0, 400.0):
        running.add({"voice_to_voice": value})
    summary = running.summary()["voice_to_voice"]
    assert summary == {"p50": 300.0, "p95": 390.0, "n": 3.0}
