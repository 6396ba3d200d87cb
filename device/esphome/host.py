"""The daemon's side of the ESPHome surface: its control interface and the satellite host.

:class:`DaemonSatellite` gives the surface (:class:`EsphomeControl`) and the voice
bridge (:class:`SatelliteHost`) what they may touch: the speaker's volume and mute,
the microphone mute, the conversation's turns and announcements, the wake word
model, the timer's ring and the LED ring's countdown. It holds no state of the
conversation; the daemon and its control interface stay the owners.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable
from dataclasses import replace
from typing import Any

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.speaking.tts import TtsAudio
from edgevoice.device.esphome.entities import DeviceView
from edgevoice.device.runtime.state import State

_LOGGER = logging.getLogger(__name__)

RING_ID = "timer-ring"


def ring_pcm(level: float = 0.3) -> Pcm:
    """The timer's ring: three short two-tone beeps (pure)."""
    t = np.arange(int(0.12 * SAMPLE_RATE)) / SAMPLE_RATE
    fade = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.01)
    beep = (np.sin(2 * np.pi * 1320 * t) + 0.5 * np.sin(2 * np.pi * 1760 * t)) / 1.5 * fade
    gap = np.zeros(int(0.08 * SAMPLE_RATE))
    wave = np.concatenate([beep, gap, beep, gap, beep, np.zeros(int(0.9 * SAMPLE_RATE))])
    return np.round(wave * level * 32767).astype(np.int16)


class DaemonSatellite:
    """The daemon as the ESPHome surface and the voice bridge see it."""

    def __init__(self, daemon: Any) -> None:
        self._daemon = daemon
        self._speaker_muted_volume: float | None = None
        self._ring = ring_pcm()
        self._tick: asyncio.Task[None] | None = None
        self._fraction: float | None = None

    # --- EsphomeControl ------------------------------------------------------------------

    async def set_volume(self, level: float) -> None:
        if self._speaker_muted_volume is not None:
            self._speaker_muted_volume = level  # unmuting restores it
            return
        await self._daemon.control.set_volume(level)

    async def mute(self, mic: bool) -> None:
        await self._daemon.control.mute(mic)

    async def set_speaker_muted(self, muted: bool) -> None:
        speaker = self._daemon.speaker
        if muted and self._speaker_muted_volume is None:
            self._speaker_muted_volume = speaker.volume
            speaker.volume = 0.0
        elif not muted and self._speaker_muted_volume is not None:
            level, self._speaker_muted_volume = self._speaker_muted_volume, None
            speaker.volume = level

    async def stop_playback(self) -> None:
        await self._daemon.control.interrupt()

    def view(self) -> DeviceView:
        daemon = self._daemon
        conversation = daemon.conversation
        telemetry = conversation.telemetry() if conversation is not None else {}
        latency = (conversation.reports.last or {}).get("voice_to_voice_ms") if conversation else None
        volume = self._speaker_muted_volume
        if volume is None:
            volume = daemon.speaker.volume if daemon.speaker is not None else daemon.config.audio.volume
        return DeviceView(
            volume=float(volume),
            speaker_muted=self._speaker_muted_volume is not None,
            mic_muted=bool(conversation and conversation.muted),
            speaking=bool(conversation and conversation.state is State.SPEAKING),
            echo_reduction_db=telemetry.get("echo_reduction_db"),
            latency_ms=latency,
        )

    # --- SatelliteHost -------------------------------------------------------------------

    async def listen(self) -> None:
        if self._daemon.conversation is not None:
            await self._daemon.conversation.listen()

    async def announce(self, audio: AsyncIterable[TtsAudio], text: str, utterance_id: str) -> None:
        if self._daemon.conversation is not None:
            await self._daemon.conversation.announce(audio, text, utterance_id)

    def end_turn(self) -> None:
        if self._daemon.conversation is not None:
            self._daemon.conversation.end_turn()

    def waive_wake_word(self, waived: bool) -> None:
        if self._daemon.conversation is not None:
            self._daemon.conversation.waive_wake_word(waived)

    def play_ring(self) -> None:
        speaker = self._daemon.speaker
        if speaker is not None and not speaker.is_playing(RING_ID):
            speaker.enqueue(self._ring, utterance_id=RING_ID, text="", kind="earcon")

    def stop_ring(self) -> None:
        if self._daemon.speaker is not None:
            self._daemon.speaker.drop(RING_ID)

    def wake_words(self) -> tuple[list[tuple[str, str]], list[str]]:
        from edgevoice.models.bundled import installed_bundled
        from edgevoice.models.location import ModelKind

        available = [(model.name, model.description.split('"')[1] if '"' in model.description else model.name)
                     for model, _ in installed_bundled() if model.kind is ModelKind.WAKEWORD]
        listener = self._daemon.conversation.front.listener if self._daemon.conversation else None
        detector = getattr(listener, "wakeword", None)
        active = [self._daemon.config.listen.wakeword] if detector is not None else []
        return available, active

    def set_wake_word(self, model: str) -> bool:
        """Load ``model`` and hand it to the listener (on the front-end thread)."""
        from edgevoice.device.assembly.hearing import build_wakeword

        daemon = self._daemon
        conversation = daemon.conversation
        if conversation is None or conversation.front.listener.wakeword is None:
            return False
        available, _ = self.wake_words()
        if model not in {name for name, _ in available}:
            return False
        listen = replace(daemon.config.listen, wakeword=model)
        detector = build_wakeword(listen, daemon.config.models.dir or None)

        def swap(listener: Any) -> list[Any]:
            listener.wakeword = detector
            return []

        conversation.front.control(swap)
        daemon.config = replace(daemon.config, listen=listen)
        _LOGGER.info("wake word set by Home Assistant: %s", model)
        return True

    def show_timer(self, fraction_left: float | None) -> None:
        ring = getattr(self._daemon, "_ring", None)
        self._fraction = fraction_left
        if ring is None:
            return
        ring.show_countdown(fraction_left)


__all__ = ["DaemonSatellite", "ring_pcm"]
