"""Wake-word arbitration in the running daemon: each wake word heard while idle is
claimed with wake probability × speech level; a device that loses stands down without a
sound, its LEDs show it for a moment, and ``wake.arbitrated`` says what happened.
Button presses and push-to-talk never come here (only the wake word does)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from edgevoice.audio.hearing.listener import WakeWordDetected
from edgevoice.device.hardware.gpio import LedPattern
from edgevoice.device.mqtt.arbitration import WakeArbiter
from edgevoice.device.mqtt.election import Verdict
from edgevoice.device.runtime.leds import LED_FOR_STATE

if TYPE_CHECKING:
    from edgevoice.device.runtime.daemon import Daemon

STOOD_DOWN_LED = LedPattern.MUTED  # dim: "I heard you; another device is answering"
STOOD_DOWN_SHOW_S = 1.5
ARBITRATED_EVENT = "wake.arbitrated"


def attach_arbiter(daemon: Daemon, arbiter: WakeArbiter) -> None:
    conversation = daemon.conversation
    assert conversation is not None

    async def arbitrate(event: WakeWordDetected) -> bool:
        level = daemon.tap.speech_level() if daemon.tap is not None else 1.0
        score = max(0.0, event.probability) * level
        started = time.monotonic()
        verdict = await arbiter.claim(score)
        waited_ms = round((time.monotonic() - started) * 1000, 1)
        daemon.bus.emit(ARBITRATED_EVENT, verdict=str(verdict), score=round(score, 6),
                        wake=round(event.probability, 3), level=round(level, 5), waited_ms=waited_ms)
        if verdict is Verdict.STAND_DOWN:
            show_stood_down(daemon)
            return False
        return True

    conversation.arbiter = arbitrate


def show_stood_down(daemon: Daemon) -> None:

    leds = [led for led in (daemon._led, daemon._ring) if led is not None]  # the daemon's own LEDs
    for led in leds:
        led.show(STOOD_DOWN_LED)

    def restore() -> None:
        conversation = daemon.conversation
        if conversation is not None:
            for led in leds:
                led.show(LED_FOR_STATE[conversation.state])

    asyncio.get_running_loop().call_later(STOOD_DOWN_SHOW_S, restore)
