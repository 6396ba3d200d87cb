"""A test acting as Home Assistant's ESPHome integration, through aioesphomeapi's APIClient.

It does what HA's ``assist_satellite`` entity does with a voice device: subscribes to the
voice assistant (API audio), collects the audio of each run the device starts, and
answers with the pipeline events and the TTS audio streamed over the API, as HA does
for a device with the SPEAKER feature (TTS_STREAM_START, 16 kHz chunks, TTS_STREAM_END).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import numpy as np
from aioesphomeapi import APIClient, VoiceAssistantEventType

from edgevoice.audio.io.room import SimulatedRoom

E = VoiceAssistantEventType


@dataclass
class PipelineRun:
    conversation_id: str
    wake_word: str | None
    audio: bytearray = field(default_factory=bytearray)
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # the device ended its audio
    aborted: bool = False

    def samples(self) -> np.ndarray:
        return np.frombuffer(bytes(self.audio), "<i2")


@dataclass
class FakeHomeAssistant:
    client: APIClient
    runs: asyncio.Queue[PipelineRun] = field(default_factory=asyncio.Queue)
    finished: asyncio.Queue[bool] = field(default_factory=asyncio.Queue)
    current: PipelineRun | None = None

    async def _start(self, conversation_id: str, flags: int, settings: object, wake_word: str | None) -> int:
        self.current = PipelineRun(conversation_id, wake_word)
        self.runs.put_nowait(self.current)
        return 0

    async def _stop(self, abort: bool) -> None:
        if self.current is not None:
            self.current.aborted = abort
            self.current.ended.set()

    async def _audio(self, data: bytes, data2: bytes | None = None) -> None:
        if self.current is not None:
            self.current.audio.extend(data)

    async def _announce_finished(self, finished: object) -> None:
        self.finished.put_nowait(bool(getattr(finished, "success", True)))

    def subscribe(self) -> None:
        self.client.subscribe_voice_assistant(
            handle_start=self._start, handle_stop=self._stop, handle_audio=self._audio,
            handle_announcement_finished=self._announce_finished)

    async def next_run(self, timeout_s: float = 60.0) -> PipelineRun:
        return await asyncio.wait_for(self.runs.get(), timeout_s)

    async def answer(self, text: str, reply_text: str, reply: np.ndarray, *,
                     continue_conversation: bool = False,
                     url: str = "http://127.0.0.1:1/unused.wav", chunk: int = 1024,
                     room: SimulatedRoom | None = None) -> None:
        """The pipeline events of one run and its TTS audio, in HA's order. With ``room``,
        the audio is paced as HA paces it (0.9 of real time) on the room's clock, so the
        reply lasts its length in audio time however fast the virtual room runs."""
        send = self.client.send_voice_assistant_event
        send(E.VOICE_ASSISTANT_RUN_START, {})
        send(E.VOICE_ASSISTANT_STT_START, {})
        send(E.VOICE_ASSISTANT_STT_VAD_START, {})
        send(E.VOICE_ASSISTANT_STT_VAD_END, {})
        send(E.VOICE_ASSISTANT_STT_END, {"text": text})
        send(E.VOICE_ASSISTANT_INTENT_START, {})
        send(E.VOICE_ASSISTANT_INTENT_END, {"conversation_id": "conv-1",
                                           "continue_conversation": str(int(continue_conversation))})
        send(E.VOICE_ASSISTANT_TTS_START, {"text": reply_text})
        send(E.VOICE_ASSISTANT_TTS_END, {"url": url})
        send(E.VOICE_ASSISTANT_RUN_END, {})
        send(E.VOICE_ASSISTANT_TTS_STREAM_START, {})
        data = reply.astype("<i2").tobytes()
        start = room.now_s if room is not None else 0.0
        for i in range(0, len(data), chunk * 2):
            if room is not None:
                # one second ahead, as HA's 0.9 x pacing gets after ~10 s: the harness's own
                # scheduling must not open gaps in the playback (underruns)
                while room.now_s < start + 0.9 * (i // 2) / 16000 - 1.0:  # noqa: ASYNC110 (the room's clock)
                    await asyncio.sleep(0.002)
            self.client.send_voice_assistant_audio(data[i:i + chunk * 2])
        send(E.VOICE_ASSISTANT_TTS_STREAM_END, {})


@contextlib.asynccontextmanager
async def home_assistant(port: int, *, key: str | None = None) -> AsyncIterator[FakeHomeAssistant]:
    client = APIClient("127.0.0.1", port, None, noise_psk=key)
    await client.connect(login=True)
    try:
        yield FakeHomeAssistant(client)
    finally:
        with contextlib.suppress(Exception):
            await client.disconnect()
