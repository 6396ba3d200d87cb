"""The voice-assistant bridge: Home Assistant's pipeline as the answer to the device's turns.

While a client has subscribed to the voice assistant (HA has adopted the device),
the conversation hands its turns here instead of to the ``[llm]`` agent
(:class:`~edgevoice.device.runtime.conversation.RemotePipeline`):

- a turn opens (wake word, button, barge-in, a continued conversation): the device
  asks HA to start a pipeline (VoiceAssistantRequest ``start``, with the conversation
  id so HA keeps the context) and streams the echo-cancelled 16 kHz mono signal as
  VoiceAssistantAudio, from the turn's onset (a barge-in's pre-roll included), until
  HA's speech-to-text has ended or the device's endpointer ends the turn;
- HA's events (VoiceAssistantEventResponse) go on the bus as ``pipeline.event``; STT
  end closes the device's turn, intent end says whether HA continues the conversation;
- the reply is HA's TTS: streamed over the API (the SPEAKER feature: 16 kHz WAV) or a
  URL fetched over HTTP; the conversation plays it like its own reply, with the play
  cursor and barge-in. When it has played, or was interrupted, the device says so
  (VoiceAssistantAnnounceFinished) and, if HA continues, listens again;
- announcements (``assist_satellite.announce``, ``start_conversation``) play the same
  way and answer VoiceAssistantAnnounceFinished; a start_conversation listens after;
- timers: HA's timer events are kept (:mod:`.timers`); a finished timer rings until a
  stop phrase is heard (no wake word needed while it rings) or the button is pressed.

Everything here runs on the event loop, except :meth:`VoiceBridge.tap`, which the
front-end thread calls with every echo-cancelled frame.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from google.protobuf.message import Message

from edgevoice.audio.frames import Pcm
from edgevoice.audio.speaking.tts import TtsAudio
from edgevoice.device.esphome import media
from edgevoice.device.esphome.background import Background
from edgevoice.device.esphome.messages import make, name_of
from edgevoice.device.esphome.timers import TIMER_EVENTS, Timer, TimerEvent, Timers, is_stop
from edgevoice.device.events import Event, EventBus, EventType
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)

# VoiceAssistantEvent's wire values and the names the bus carries.
PIPELINE_EVENTS = {
    0: "error", 1: "run-start", 2: "run-end", 3: "stt-start", 4: "stt-end", 5: "intent-start",
    6: "intent-end", 7: "tts-start", 8: "tts-end", 9: "wake_word-start", 10: "wake_word-end",
    11: "stt-vad-start", 12: "stt-vad-end", 98: "tts-stream-start", 99: "tts-stream-end",
    100: "intent-progress",
}
# VoiceAssistantFeature bits (what the device tells HA in DeviceInfoResponse).
FEATURE_VOICE_ASSISTANT = 1 << 0
FEATURE_SPEAKER = 1 << 1
FEATURE_API_AUDIO = 1 << 2
FEATURE_TIMERS = 1 << 3
FEATURE_ANNOUNCE = 1 << 4
FEATURE_START_CONVERSATION = 1 << 5
FEATURES = (FEATURE_VOICE_ASSISTANT | FEATURE_SPEAKER | FEATURE_API_AUDIO | FEATURE_TIMERS
            | FEATURE_ANNOUNCE | FEATURE_START_CONVERSATION)
SUBSCRIBE_API_AUDIO = 1
PRE_ROLL_S = 2.0
STREAM_WAIT_S = 1.0  # after tts-end, how long to wait for HA to start streaming the audio
RING_POLL_S = 0.1
COUNTDOWN_S = 1.0


class PipelineError(EdgeVoiceError):
    """Home Assistant's pipeline reported an error (its code and message)."""

    code = "pipeline_failed"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"Home Assistant's pipeline failed: {message or code}")
        self.pipeline_code = code


class SatelliteHost(Protocol):
    """What the bridge needs of the device (the daemon provides it)."""

    async def listen(self) -> None: ...

    async def announce(self, audio: AsyncIterable[TtsAudio], text: str, utterance_id: str) -> None: ...

    def end_turn(self) -> None: ...

    def waive_wake_word(self, waived: bool) -> None: ...

    def play_ring(self) -> None: ...

    def stop_ring(self) -> None: ...

    def wake_words(self) -> tuple[list[tuple[str, str]], list[str]]: ...

    def set_wake_word(self, model: str) -> bool: ...

    def show_timer(self, fraction_left: float | None) -> None: ...


@dataclass(slots=True)
class _Run:
    """One pipeline run HA is answering."""

    turn_id: str
    items: asyncio.Queue[tuple[str, Any]] = field(default_factory=asyncio.Queue)
    streaming: bool = True  # the device still sends the microphone
    tts_text: str = ""
    continue_conversation: bool = False
    replying: bool = False


@dataclass(frozen=True, slots=True)
class BridgeSettings:
    timer_ring_s: float = 300.0
    stop_phrases: tuple[str, ...] = ("stop",)
    continue_delay_s: float = 0.3


class VoiceBridge:
    """The conversation's :class:`RemotePipeline` over one subscribed API session."""

    def __init__(self, bus: EventBus, host: SatelliteHost, settings: BridgeSettings) -> None:
        self.bus = bus
        self.host = host
        self.settings = settings
        self.timers = Timers()
        self._send: Callable[[list[Message]], None] | None = None
        self._run: _Run | None = None
        self._conversation_id = ""
        self._announcements: dict[str, bool] = {}  # utterance id -> start a conversation after
        self._recent: deque[tuple[float, Pcm]] = deque()
        self._streaming = threading.Event()  # read by the front-end thread
        self._loop: asyncio.AbstractEventLoop | None = None
        self._background = Background("the voice bridge")
        self._ring_task: asyncio.Task[None] | None = None
        self._countdown_task: asyncio.Task[None] | None = None
        self._unsubscribe = bus.subscribe(self._on_bus)

    # --- adoption -------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether HA's pipeline answers (a client subscribed to the voice assistant)."""
        return self._send is not None

    def subscribe(self, send: Callable[[list[Message]], None], flags: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._send = send
        _LOGGER.info("Home Assistant subscribed to the voice assistant: its pipeline answers now")
        self.bus.emit(EventType.ESPHOME_CLIENT, status="subscribed",
                      api_audio=bool(flags & SUBSCRIBE_API_AUDIO))

    def unsubscribe(self, send: Callable[[list[Message]], None]) -> None:
        if self._send is not send:
            return
        self._send = None
        self._streaming.clear()
        run, self._run = self._run, None
        if run is not None:
            run.items.put_nowait(("error", ("disconnected", "Home Assistant disconnected")))
        _LOGGER.info("Home Assistant unsubscribed from the voice assistant: the [llm] agent answers")
        self.bus.emit(EventType.ESPHOME_CLIENT, status="unsubscribed")

    def close(self) -> None:
        self._unsubscribe()
        self._background.cancel()
        for task in (self._ring_task, self._countdown_task):
            if task is not None:
                task.cancel()

    def _out(self, *messages: Message) -> None:
        if self._send is not None:
            self._send(list(messages))

    # --- the conversation's hooks (RemotePipeline) ------------------------------------------

    def turn_started(self, turn_id: str, *, wake_word: str | None = None,
                     onset_s: float | None = None) -> None:
        """A turn opened: unless a timer rings (then the turn is the device's own, for
        "stop"), ask HA for a pipeline and stream the microphone from the onset."""
        if self.timers.is_ringing or not self.active:
            return
        previous = self._run
        if previous is not None:
            previous.items.put_nowait(("superseded", None))
        self._run = _Run(turn_id)
        # HA takes the phrase ("Okay Nabu"), as ESPHome firmware sends it, not the model's name.
        phrase = dict(self.host.wake_words()[0]).get(wake_word, wake_word) if wake_word else ""
        self._out(make("VoiceAssistantRequest", start=True, conversation_id=self._conversation_id,
                       flags=0, wake_word_phrase=phrase,
                       audio_settings=make("VoiceAssistantAudioSettings", noise_suppression_level=0,
                                           auto_gain=0, volume_multiplier=1.0)))
        if onset_s is not None:
            for end_s, pcm in list(self._recent):
                if end_s > onset_s:
                    self._out(make("VoiceAssistantAudio", data=pcm.tobytes()))
        self._streaming.set()

    def turn_ended(self, turn_id: str) -> None:
        """The device's endpointer ended the turn: stop the microphone, let HA finish STT
        (the audio's ``end``: HA ends its stream and goes on; a stop request would abort)."""
        run = self._run
        if run is not None and run.turn_id == turn_id and run.streaming:
            self._stop_streaming(run)
            self._out(make("VoiceAssistantAudio", end=True))

    def turn_abandoned(self, turn_id: str) -> None:
        """Nothing was said after the wake word: abort HA's run."""
        run = self._run
        if run is not None and run.turn_id == turn_id:
            self._stop_streaming(run)
            self._run = None
            self._out(make("VoiceAssistantRequest", start=False))

    def handles(self, turn_id: str) -> bool:
        """Whether this turn's reply comes from here (HA, or a ringing timer's stop)."""
        return self.timers.is_ringing or (self._run is not None and self._run.turn_id == turn_id)

    async def reply(self, turn_id: str, text: str) -> AsyncIterator[TtsAudio]:
        """The reply to a turn: HA's TTS audio as it comes, or nothing."""
        if self.timers.is_ringing:
            if is_stop(text, self.settings.stop_phrases):
                self.stop_timers("voice")
            return
        run = self._run
        if run is None or run.turn_id != turn_id:
            return
        run.replying = True
        self.turn_ended(turn_id)
        async for piece in self._tts_of(run):
            yield piece

    async def _tts_of(self, run: _Run) -> AsyncIterator[TtsAudio]:
        url = ""
        streamed = False
        first = True
        pending: tuple[str, Any] | None = None
        while True:
            kind, value = pending if pending is not None else await run.items.get()
            pending = None
            if kind == "audio":
                streamed = True
                text, first = (run.tts_text if first else ""), False
                now = time.monotonic()
                yield TtsAudio(text, media.pcm16(value), (), now, now)
            elif kind == "stream-start":
                streamed = True
            elif kind == "stream-end":
                return
            elif kind == "url" and not streamed:
                # With the SPEAKER feature HA streams the audio right after tts-end; a
                # client that does not stream gets its URL fetched.
                url = str(value)
                pending = await self._stream_follows(run)
                if pending is not None:
                    continue
                async for piece in media.fetch_audio(url, run.tts_text):
                    yield piece
                return
            elif kind == "run-end" and not (url or streamed):
                return
            elif kind == "error":
                code, message = value
                raise PipelineError(code, message)
            elif kind == "superseded":
                return

    @staticmethod
    async def _stream_follows(run: _Run) -> tuple[str, Any] | None:
        """After tts-end: HA's stream start (or first audio) if it comes within
        STREAM_WAIT_S (run-end, which HA sends in between, is passed over)."""
        deadline = time.monotonic() + STREAM_WAIT_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                async with asyncio.timeout(left):
                    item = await run.items.get()
            except TimeoutError:
                return None
            if item[0] in ("stream-start", "audio"):
                return item
            if item[0] in ("error", "superseded"):
                run.items.put_nowait(item)
                return None
        return None

    def _stop_streaming(self, run: _Run) -> None:
        run.streaming = False
        self._streaming.clear()

    def tap(self, end_s: float, pcm: Pcm) -> None:
        """Every echo-cancelled frame (front-end thread): kept for the pre-roll, and sent
        while HA listens."""
        recent = self._recent
        recent.append((end_s, pcm.copy()))
        while recent and recent[0][0] < end_s - PRE_ROLL_S:
            recent.popleft()
        if self._streaming.is_set() and self._loop is not None:
            data = pcm.tobytes()
            try:
                self._loop.call_soon_threadsafe(self._send_audio, data)
            except RuntimeError:  # the loop has closed
                pass

    def _send_audio(self, data: bytes) -> None:
        if self._streaming.is_set():
            self._out(make("VoiceAssistantAudio", data=data))

    # --- what HA sends -----------------------------------------------------------------------

    def handle(self, message: Message) -> list[Message]:
        """A voice-assistant message from HA; returns the answers to send."""
        kind = name_of(message)
        m: Any = message
        if kind == "VoiceAssistantEventResponse":
            self._on_pipeline_event(int(m.event_type), {d.name: d.value for d in m.data})
        elif kind == "VoiceAssistantAudio":
            run = self._run
            if run is not None and m.data:
                run.items.put_nowait(("audio", bytes(m.data)))
        elif kind == "VoiceAssistantResponse":
            if m.error and self._run is not None:
                self._run.items.put_nowait(("error", ("start_failed", "the pipeline did not start")))
        elif kind == "VoiceAssistantAnnounceRequest":
            self._announce(m.media_id, m.preannounce_media_id, m.text, bool(m.start_conversation))
        elif kind == "VoiceAssistantTimerEventResponse":
            self._on_timer(TIMER_EVENTS.get(int(m.event_type), TimerEvent.UPDATED), m)
        elif kind == "VoiceAssistantConfigurationRequest":
            return [self.configuration()]
        elif kind == "VoiceAssistantSetConfiguration":
            for model in list(m.active_wake_words)[:1]:
                if not self.host.set_wake_word(model):
                    _LOGGER.warning("Home Assistant chose wake word %r, which this device does not have",
                                    model)
        return []

    def configuration(self) -> Message:
        available, active = self.host.wake_words()
        words = [make("VoiceAssistantWakeWord", id=model, wake_word=phrase, trained_languages=["en"])
                 for model, phrase in available]
        return make("VoiceAssistantConfigurationResponse", available_wake_words=words,
                    active_wake_words=active, max_active_wake_words=1)

    def _on_pipeline_event(self, code: int, data: dict[str, str]) -> None:
        name = PIPELINE_EVENTS.get(code, str(code))
        self.bus.emit(EventType.PIPELINE_EVENT, event=name,
                      **{k: v for k, v in data.items() if k in ("code", "message", "conversation_id")})
        run = self._run
        if run is None:
            return
        if name in ("stt-vad-end", "stt-end"):
            if run.streaming:
                self._stop_streaming(run)
                self.host.end_turn()
        elif name == "intent-end":
            self._conversation_id = data.get("conversation_id", self._conversation_id)
            run.continue_conversation = data.get("continue_conversation") == "1"
        elif name == "tts-start":
            run.tts_text = data.get("text", "")
        elif name == "tts-end" and data.get("url"):
            run.items.put_nowait(("url", data["url"]))
        elif name == "tts-stream-start":
            run.items.put_nowait(("stream-start", None))
        elif name == "tts-stream-end":
            run.items.put_nowait(("stream-end", None))
        elif name == "run-end":
            self._stop_streaming(run)
            run.items.put_nowait(("run-end", None))
            if not run.replying:
                self.host.end_turn()
        elif name == "error":
            run.items.put_nowait(("error", (data.get("code", ""), data.get("message", ""))))
            if run.streaming:
                self._stop_streaming(run)
                self.host.end_turn()

    # --- replies played, announcements -------------------------------------------------------

    def _on_bus(self, event: Event) -> None:
        if event.type == EventType.BUTTON_PRESSED and self.timers.is_ringing:
            self.stop_timers("button")
        if event.type != EventType.REPLY_DONE:
            return
        utterance = event.data.get("utterance_id")
        completed = event.data.get("status") == "completed"
        run = self._run
        if run is not None and run.turn_id == utterance and run.replying:
            self._run = None
            self._out(make("VoiceAssistantAnnounceFinished", success=completed))
            if completed and run.continue_conversation:
                self._background.spawn(self._listen_again())
        elif utterance in self._announcements:
            start_after = self._announcements.pop(utterance)
            self._out(make("VoiceAssistantAnnounceFinished", success=completed))
            if completed and start_after:
                self._background.spawn(self._listen_again())

    async def _listen_again(self) -> None:
        await asyncio.sleep(self.settings.continue_delay_s)
        if self.active:
            await self.host.listen()

    def _announce(self, media_id: str, preannounce: str, text: str, start_conversation: bool) -> None:
        utterance = f"announce-{uuid.uuid4().hex[:10]}"
        self._announcements[utterance] = start_conversation

        async def audio() -> AsyncIterator[TtsAudio]:
            if preannounce:
                try:  # the chime before it: the announcement goes on without one
                    async for piece in media.fetch_audio(preannounce):
                        yield piece
                except media.MediaError as err:
                    _LOGGER.warning("the announcement's chime was not played: %s", err)
            if media_id:
                async for piece in media.fetch_audio(media_id, text):
                    yield piece

        self._background.spawn(self.host.announce(audio(), text, utterance))

    def play_url(self, url: str) -> None:
        """``media_player.play_media`` (announce or not): played like an announcement."""
        self._announce(url, "", "", False)


    # --- timers -------------------------------------------------------------------------------

    def _on_timer(self, event: TimerEvent, m: Any) -> None:
        now = time.monotonic()
        timer = Timer(str(m.timer_id), str(m.name), int(m.total_seconds), int(m.seconds_left),
                      bool(m.is_active), now)
        self.timers.update(event, timer)
        self.bus.emit(EventType.TIMER, event=str(event), timer_id=timer.timer_id, name=timer.name,
                      total_s=timer.total_s, left_s=timer.left_s)
        self.host.show_timer(self.timers.fraction_left(now))
        if self.timers.timers and (self._countdown_task is None or self._countdown_task.done()):
            self._countdown_task = asyncio.ensure_future(self._countdown())
        if event is TimerEvent.FINISHED and (self._ring_task is None or self._ring_task.done()):
            self._ring_task = asyncio.ensure_future(self._ring())

    async def _countdown(self) -> None:
        """The LED ring's countdown, once a second while a timer runs."""
        while self.timers.timers:
            await asyncio.sleep(COUNTDOWN_S)
            self.host.show_timer(self.timers.fraction_left(time.monotonic()))

    async def _ring(self) -> None:
        started = time.monotonic()
        self.host.waive_wake_word(True)  # "stop" needs no wake word while it rings
        try:
            while self.timers.is_ringing:
                if time.monotonic() - started >= self.settings.timer_ring_s:
                    self.stop_timers("timeout")
                    return
                self.host.play_ring()  # again once the last ring has played
                await asyncio.sleep(RING_POLL_S)
        finally:
            self.host.waive_wake_word(False)
            self.host.stop_ring()

    def stop_timers(self, reason: str) -> None:
        stopped = self.timers.stop_ringing()
        if not stopped:
            return
        self.host.waive_wake_word(False)
        self.host.stop_ring()
        self.host.show_timer(self.timers.fraction_left(time.monotonic()))
        for timer_id in stopped:
            self.bus.emit(EventType.TIMER, event="stopped", timer_id=timer_id, reason=reason)
        _LOGGER.info("timer stopped (%s)", reason)


__all__ = ["FEATURES", "BridgeSettings", "PipelineError", "SatelliteHost", "VoiceBridge"]
