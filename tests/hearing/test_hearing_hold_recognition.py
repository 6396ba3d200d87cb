"""``Listener.hold_recognition``: while the device speaks and a barge-in is being decided,
turn audio is kept, not decoded; once the hold lifts (or the turn ends) it is all
decoded, in order, and the turn reads as without the hold. The real Silero and
pocketsphinx."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.asr_watch import WatchedSession
from support.hearing_audio import frames, piper_speech, place

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.asr import AsrSession
from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine
from edgevoice.audio.hearing.endpoint import EndpointSettings, SpeechStarted
from edgevoice.audio.hearing.events import FinalTranscript, HearingEvent
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.vad import VoiceActivity
from edgevoice.audio.hearing.vad_silero import SileroVad
from edgevoice.models import ModelKind, resolve_model


class CountingPocketsphinx(PocketsphinxEngine):
    """The real engine; counts the samples its sessions were given."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.fed = 0

    def start(self) -> AsrSession:
        return WatchedSession(super().start(), on_accept=self._count)

    def _count(self, pcm: Pcm) -> None:
        self.fed += len(pcm)


@pytest.fixture(scope="module")
def asr() -> Iterator[CountingPocketsphinx]:
    engine = CountingPocketsphinx(resolve_model("pocketsphinx-en-us", ModelKind.ASR).path)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def scene() -> Pcm:
    speech = piper_speech("Wait, what is the weather like tomorrow?")
    return place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 1.5, snr_db=40.0, seed=3).audio


def listener(asr: PocketsphinxEngine) -> Listener:
    vad = VoiceActivity(SileroVad(resolve_model("silero-vad", ModelKind.VAD).path))
    # no text hold: free-form pocketsphinx mis-hears words a hold would wait on, and the
    # scene's 1.5 s tail is shorter than that wait (test_hearing_text_hold*.py test it).
    # The early final past the comma's pause ("Wait,"): an early final inside it would end
    # the free run's session there, while the held run (no early final while held) decodes
    # on, and the two would read in different pieces.
    return Listener(vad, asr, endpoint=EndpointSettings(end_silence_ms=600, pre_roll_ms=300,
                                                        hold_silence_ms=0), early_final_ms=300)


def final(events: list[HearingEvent]) -> FinalTranscript:
    (result,) = [e for e in events if isinstance(e, FinalTranscript)]
    return result


@pytest.mark.parametrize("lift_at_s", [None, 1.5])
def test_held_audio_is_decoded_in_order_and_the_turn_reads_the_same(
        asr: CountingPocketsphinx, scene: Pcm, lift_at_s: float | None) -> None:
    free = listener(asr)
    plain = [e for f in frames(scene) for e in free.process(f)]
    held = listener(asr)
    held.hold_recognition = True
    asr.fed = 0
    events: list[HearingEvent] = []
    fed_while_held = None
    for index, frame in enumerate(frames(scene)):
        if lift_at_s is not None and index * len(frame) >= lift_at_s * SAMPLE_RATE and held.hold_recognition:
            fed_while_held = asr.fed
            held.hold_recognition = False
        events.extend(held.process(frame))
    assert any(isinstance(e, SpeechStarted) for e in events)
    if lift_at_s is not None:
        assert fed_while_held == 0  # the turn had begun (0.8 s), nothing decoded until the lift
    assert asr.fed > 1.0 * SAMPLE_RATE  # ...and then all of it, pre-roll included
    assert final(events).text == final(plain).text != ""
    assert [(w.word, w.start) for w in final(events).words] == [(w.word, w.start) for w in final(plain).words]
