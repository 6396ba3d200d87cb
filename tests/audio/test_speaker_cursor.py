"""The speaker's play cursor: what was written, what was heard, drop within one period."""

from __future__ import annotations

import numpy as np
import pytest

from edgevoice.audio.speaking.playback import SegmentProgress, Speaker

P = 160


def _ramp(n: int, start: int = 1) -> np.ndarray:
    return np.arange(start, start + n, dtype=np.int16)


def test_periods_carry_queued_pcm_across_segments_then_silence() -> None:
    speaker = Speaker(P)
    speaker.enqueue(_ramp(250), utterance_id="a", text="one")
    speaker.enqueue(_ramp(100, 1000), utterance_id="a", text="two")
    out = np.concatenate([speaker.next_period() for _ in range(3)])
    assert np.array_equal(out[:250], _ramp(250))
    assert np.array_equal(out[250:350], _ramp(100, 1000))
    assert not np.any(out[350:])


def test_cursor_subtracts_what_sits_in_the_device_buffer() -> None:
    speaker = Speaker(P)
    speaker.enqueue(_ramp(400), utterance_id="u", text="hello there")
    speaker.next_period()
    speaker.set_output_latency(P)  # the whole first period is still in the device
    assert speaker.progress("u")[0].played == 0
    speaker.next_period()
    speaker.set_output_latency(P)
    assert speaker.progress("u")[0].played == P
    assert speaker.pending_samples("u") == 400 - P
    speaker.next_period()
    speaker.set_output_latency(0)
    progress = speaker.progress("u")[0]
    assert progress.played == 400 and progress.complete
    assert not speaker.is_playing()


def test_drop_silences_within_one_period_and_keeps_what_was_heard() -> None:
    speaker = Speaker(P)
    speaker.enqueue(_ramp(10 * P), utterance_id="u", text="a long sentence")
    speaker.enqueue(_ramp(P), utterance_id="v", text="next")
    speaker.next_period()
    speaker.next_period()
    speaker.set_output_latency(P)
    dropped = speaker.drop("u")
    assert dropped == 8 * P
    nxt = speaker.next_period()
    assert np.array_equal(nxt, _ramp(P))  # the other utterance plays right away
    speaker.set_output_latency(P)
    progress = speaker.progress("u")[0]
    assert progress.total == 2 * P and progress.played == 2 * P
    speaker.drop()
    assert not np.any(speaker.next_period())


def test_drop_all_then_only_silence() -> None:
    speaker = Speaker(P)
    speaker.enqueue(_ramp(5 * P), utterance_id="u")
    speaker.next_period()
    speaker.drop()
    assert not np.any(speaker.next_period())
    assert speaker.pending_samples() == 0 or speaker.pending_samples() <= P


def test_segment_callbacks_fire_when_sound_leaves_the_loudspeaker() -> None:
    speaker = Speaker(P)
    started: list[SegmentProgress] = []
    finished: list[SegmentProgress] = []
    speaker.on_segment_started = started.append
    speaker.on_segment_finished = finished.append
    speaker.enqueue(_ramp(P), utterance_id="u", text="hi")
    speaker.next_period()
    speaker.set_output_latency(P)
    assert not started
    speaker.next_period()
    speaker.set_output_latency(P)
    assert [s.text for s in started] == ["hi"]
    assert [s.played for s in finished] == [P]
    speaker.next_period()
    speaker.set_output_latency(P)
    assert len(started) == 1 and len(finished) == 1


def test_volume_scales_and_rejects_bad_pcm() -> None:
    speaker = Speaker(P, volume=0.5)
    speaker.enqueue(np.full(P, 1000, np.int16), utterance_id="u")
    assert np.all(speaker.next_period() == 500)
    with pytest.raises(ValueError):
        speaker.enqueue(np.zeros(P, np.float32), utterance_id="u")  # type: ignore[arg-type]
    speaker.volume = 3.0
    assert speaker.volume == 1.0


class _Queue:
    """What a backend with its own playback queue holds: periods taken, not yet played."""

    def __init__(self) -> None:
        self.queued = 0  # periods

    def discard(self) -> int:
        discarded, self.queued = self.queued, 0
        return discarded * P


def test_drop_takes_back_what_the_backend_queue_discarded_and_replays_other_utterances() -> None:
    speaker = Speaker(P)
    queue = _Queue()
    speaker.discard_queued = queue.discard
    speaker.enqueue(_ramp(3 * P), utterance_id="reply")
    speaker.enqueue(_ramp(2 * P, 5000), utterance_id="earcon", kind="earcon")
    played = [speaker.next_period() for _ in range(4)]  # all of reply and half the earcon
    queue.queued = 3  # the last three of them are queued in the backend, the first in the device
    speaker.set_output_latency(4 * P)
    speaker.drop("reply")
    reply = speaker.progress("reply")[0]
    assert reply.dropped and reply.total == P and reply.played == 0  # one period was written
    speaker.set_output_latency(0)
    assert speaker.progress("reply")[0].played == P
    # the earcon's discarded period plays again, then the rest of it
    again = [speaker.next_period() for _ in range(2)]
    assert np.array_equal(np.concatenate(again), _ramp(2 * P, 5000))
    assert np.array_equal(played[0], _ramp(P))
    speaker.set_output_latency(0)
    assert speaker.progress("earcon")[0].complete
    assert not speaker.is_playing()


def test_sound_queued_into_silence_discards_the_queued_silence() -> None:
    speaker = Speaker(P)
    queue = _Queue()
    speaker.discard_queued = queue.discard
    for _ in range(5):
        speaker.next_period()
    queue.queued = 5
    speaker.set_output_latency(5 * P)
    speaker.enqueue(_ramp(P), utterance_id="u")
    assert queue.queued == 0
    assert speaker.played_position == 0  # nothing of the timeline was heard yet
    assert np.array_equal(speaker.next_period(), _ramp(P))
    speaker.set_output_latency(0)
    assert speaker.progress("u")[0].complete
