"""A turn's end never waits for its final pass on the front end's thread.

The recognizer finishes a turn in its own time (pocketsphinx in a worker process, Moonshine
on its thread); under a CPU quota that took seconds, and while the front end waited the
duplex queue overflowed and audio was lost. With ``Listener.defer_final`` (which the
daemon's front-end thread sets) the turn's end reports a ``FinalPending``; the front-end
thread goes on with the next frames, and its deliverer thread waits for the words and
hands the events to the event loop in the order they were heard.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest
from support.hearing_audio import frames, piper_speech, place
from support.silero_listener import silero_listener

from edgevoice.audio.frames import DuplexFrame, Pcm
from edgevoice.audio.hearing.asr import AsrEngine, AsrResult, AsrSession
from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine
from edgevoice.audio.hearing.endpoint import SpeechStarted
from edgevoice.audio.hearing.events import FinalPending, FinalTranscript, HearingEvent, SpeechStopped
from edgevoice.audio.hearing.listener import Listener
from edgevoice.device.runtime.frontend import FrontEnd, FrontEndThread, FrontResult
from edgevoice.models import ModelKind, resolve_model

COMMANDS = ("turn on the light", "turn off the light", "what is the time")


class GatedAsr(AsrEngine):
    """A real recognizer whose final pass is only ready once ``release`` is set, as a slow
    decoder's would be; reading it on the front end's own thread fails the test."""

    name = "gated"

    def __init__(self, inner: AsrEngine) -> None:
        super().__init__(model_name=inner.model_name, language=inner.language,
                         low_confidence=inner.low_confidence)
        self.inner = inner
        self.release = threading.Event()
        self.forbidden_thread: int | None = None

    @property
    def grammar(self) -> tuple[str, ...]:
        return self.inner.grammar

    def set_grammar(self, phrases: Sequence[str]) -> None:
        self.inner.set_grammar(phrases)

    def start(self) -> AsrSession:
        return _GatedSession(self, self.inner.start())


class _GatedSession(AsrSession):
    def __init__(self, engine: GatedAsr, inner: AsrSession) -> None:
        self._engine = engine
        self._inner = inner

    def accept(self, pcm: Pcm) -> str | None:
        return self._inner.accept(pcm)

    def finish_soon(self) -> Callable[[], AsrResult]:
        result = self._inner.finish()
        engine = self._engine

        def wait() -> AsrResult:
            assert threading.get_ident() != engine.forbidden_thread, "the front end waited for the final"
            assert engine.release.wait(10.0), "the final was never released"
            return result

        return wait

    def finish(self) -> AsrResult:
        return self.finish_soon()()

    def cancel(self) -> None:
        self._inner.cancel()


@pytest.fixture(scope="module")
def pocketsphinx() -> Iterator[PocketsphinxEngine]:
    engine = PocketsphinxEngine(resolve_model("pocketsphinx-en-us", ModelKind.ASR).path, grammar=COMMANDS)
    yield engine
    engine.close()


def _listener(asr: AsrEngine) -> Listener:
    # early_final_ms=0: the whole final pass falls at the turn's end, the case that blocked
    return silero_listener(asr, early_final_ms=0.0)


def _scene() -> np.ndarray:
    return place([(0.5, piper_speech("Turn on the light.")), (3.5, piper_speech("What is the time?"))],
                 6.0, snr_db=40.0, seed=31).audio


def test_the_listener_reports_a_pending_final_and_hears_on(pocketsphinx: PocketsphinxEngine) -> None:
    audio = _scene()
    waiting = _listener(pocketsphinx)
    expected = [e for f in frames(audio) for e in waiting.process(f) if isinstance(e, FinalTranscript)]
    assert [e.text for e in expected] == ["turn on the light", "what is the time"]

    gated = GatedAsr(pocketsphinx)
    gated.forbidden_thread = threading.get_ident()  # this test's thread plays the front end
    listener = _listener(gated)
    listener.defer_final = True
    events = [e for f in frames(audio) for e in listener.process(f)]  # never waits on the gate
    assert not any(isinstance(e, FinalTranscript) for e in events)
    pending = [e for e in events if isinstance(e, FinalPending)]
    assert len(pending) == 2  # the second turn was heard while the first one's words were pending
    stops = [i for i, e in enumerate(events) if isinstance(e, SpeechStopped)]
    assert [events.index(p) for p in pending] == [i + 1 for i in stops]

    gated.release.set()
    resolved: list[HearingEvent] = []
    reader = threading.Thread(target=lambda: resolved.extend(e for p in pending for e in p.resolve()))
    reader.start()
    reader.join(10.0)
    # the same turns as when the turn's end waited (word times and confidences aside: the
    # one recognizer adapts to what it heard before, and it heard the scene twice here)
    assert all(isinstance(e, FinalTranscript) for e in resolved)
    assert [_turn(e) for e in resolved if isinstance(e, FinalTranscript)] == [_turn(e) for e in expected]


def _turn(final: FinalTranscript) -> tuple[str, float, float, list[str]]:
    return final.text, final.start, final.end, [w.word for w in final.words]


class FramesOf:
    """The duplex loop's side of the front-end thread (FrameSource), from a recording."""

    def __init__(self, audio: np.ndarray) -> None:
        self._frames = [DuplexFrame(i, f, np.zeros_like(f)) for i, f in enumerate(frames(audio))]
        self.taken = 0

    def take(self, timeout: float, at_least: int = 1) -> list[DuplexFrame] | None:
        if self.taken >= len(self._frames):
            return None
        batch = self._frames[self.taken : self.taken + at_least]
        self.taken += len(batch)
        return batch


async def test_the_front_end_thread_goes_on_while_the_deliverer_waits(
        pocketsphinx: PocketsphinxEngine) -> None:
    gated = GatedAsr(pocketsphinx)
    front = FrontEnd(_listener(gated), None)
    source = FramesOf(_scene())
    failures: list[str] = []
    thread = FrontEndThread(front, source, asyncio.get_running_loop(), tick=lambda: None,
                            in_reply=lambda: False, playing=lambda: False,
                            on_failure=lambda _i, text: failures.append(text))
    thread.start()
    gated.forbidden_thread = thread._thread.ident  # the final's words must not be awaited there
    for _ in range(200):  # every frame is heard with the first turn's words still pending
        if source.taken >= len(source._frames):
            break
        await asyncio.sleep(0.05)
    assert source.taken == len(source._frames)
    await asyncio.sleep(0.2)
    delivered: list[FrontResult] = []
    while not thread.results.empty():
        item = thread.results.get_nowait()
        assert item is not None
        delivered.append(item)
    # what came before the first turn's end was handed over; its end (and all after) waits
    assert delivered and not any(isinstance(e, SpeechStopped) for r in delivered for e in r.events)
    gated.release.set()
    while (item := await asyncio.wait_for(thread.results.get(), 10.0)) is not None:
        delivered.append(item)
    thread.join(5.0)
    assert not failures, failures
    heard = [e for r in delivered for e in r.events if not isinstance(e, FinalPending)]
    kinds = [type(e) for e in heard if isinstance(e, SpeechStarted | SpeechStopped | FinalTranscript)]
    assert kinds == [SpeechStarted, SpeechStopped, FinalTranscript] * 2
    said = [e.text for e in heard if isinstance(e, FinalTranscript)]
    assert said == ["turn on the light", "what is the time"]
