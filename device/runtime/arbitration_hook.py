"""Wake-word arbitration in the running daemon: each wake word heard while idle is
claimed with wake probability × speech level; a device that loses stands down without a
sound, its LEDs show it for a moment, and ``wake.arbitrated`` says what happened.
Button presses and push-to-talk never come here (only the wake word does)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from edgevoice.audio.hearing.events import WakeWordDetected
from edgevoice.device.hardware.gpio import LedPattern
from edgevoice.device.mqtt.arbitration import WakeArbiter
from edgevoice.device.mqtt.election import Verdict
from edgevoice.device.runtime.leds import LED_FOR_STATE
from edgevoice.device.runtime.state import State

if TYPE_CHECKING:
    from edgevoice.device.runtime.daemon import Daemon

STOOD_DOWN_LED = LedPattern.MUTED  # dim: "I heard you; another device is answering"
STOOD_DOWN_SHOW_S = 1.5
ARBITRATED_EVENT = "wake.arbitrated"
# A device that has not heard the wake word yet when another's claim arrives could still
# claim at most wake probability 1 × its speech level. The level is of the loudest 30 % of
# the last second, so by the time a peer has detected the word it hardly grows: measured on
# whole daemons (bench/arbitration_daemons.py), a passer's level at its own detection was
# 0.999-1.001 × its level when it passed, 20 of 20. The margin covers what that missed;
# the probability factor of 1 is already ~10 % above what the detector reports (0.85-0.92).
PASS_LEVEL_MARGIN = 1.1


def attach_arbiter(daemon: Daemon, arbiter: WakeArbiter) -> None:
    conversation = daemon.conversation
    assert conversation is not None

    def claim_bound() -> float:
        """The highest claim this device could make for a wake word said now: none while
        it is busy (only an idle device's wake word is arbitrated)."""
        if conversation.state is not State.IDLE:
            return 0.0
        if daemon.tap is None:
            return float("inf")  # no level to weigh by: never pass
        return PASS_LEVEL_MARGIN * float(daemon.tap.speech_level())

    async def arbitrate(event: WakeWordDetected) -> bool:
        level = daemon.tap.speech_level() if daemon.tap is not None else 1.0
        score = max(0.0, event.probability) * level
        started = time.monotonic()
        verdict = await arbiter.claim(score)
        waited_ms = round((time.monotonic() - started) * 1000, 1)
        daemon.bus.emit(ARBITRATED_EVENT, verdict=str(verdict), score=round(score, 6),
                        wake=round(event.probability, 3), level=round(level, 5), waited_ms=waited_ms,
                        passed=arbiter.last_passed,
                        bound=round(arbiter.last_pass_bound, 6)
                        if arbiter.last_passed and arbiter.last_pass_bound is not None else None)
        if verdict is Verdict.STAND_DOWN:
            show_stood_down(daemon)
            return False
        return True

    arbiter.claim_bound = claim_bound
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
