"""Wiring the timers (:mod:`edgevoice.device.timers`) into the running daemon: the
earcon, listening for "stop" without the wake word while a timer rings, the LEDs (the
ringing pattern, and the LED ring's countdown of the timer that ends first)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from edgevoice.audio.speaking.earcons import Earcon, earcon_pcm
from edgevoice.device.hardware.gpio import LedPattern
from edgevoice.device.hardware.ledring import CountdownSource
from edgevoice.device.runtime.leds import LED_FOR_STATE
from edgevoice.device.timers.service import TimerService

if TYPE_CHECKING:
    from edgevoice.device.runtime.daemon import Daemon

RINGING_LED = LedPattern.ERROR  # fast blinks: something wants attention


def attach_timers(daemon: Daemon) -> TimerService:
    """A started :class:`TimerService` for ``daemon`` (its conversation built)."""
    conversation = daemon.conversation
    speaker = daemon.speaker
    assert conversation is not None and speaker is not None

    def ring() -> None:
        speaker.enqueue(earcon_pcm(Earcon.TIMER, daemon.config.earcons.level),
                        utterance_id="earcon:timer", kind="earcon")

    def on_ringing(on: bool) -> None:
        # In wake-word mode "stop" needs no wake word for as long as a timer rings (a
        # turn opened at each ring timed out on the audio clock when the loop fell behind)
        conversation.waive_wake_word(on)
        pattern = RINGING_LED if on else LED_FOR_STATE[conversation.state]
        for led in (daemon._led, daemon._ring):  # the daemon's own LEDs
            if led is not None:
                led.show(pattern)

    def on_countdown(fraction_left: float | None) -> None:
        # The ring draws it only while its pattern is off (idle, in every listen mode): a
        # turn's pattern or the ringing flashes cover it, and Home Assistant's countdown,
        # when one runs, goes first (ledring.COUNTDOWN_PRECEDENCE).
        if daemon._ring is not None:
            daemon._ring.show_countdown(fraction_left, CountdownSource.DEVICE)

    service = TimerService(Path(daemon.config.device.state_dir), ring=ring, on_ringing=on_ringing,
                           emit=daemon.bus.emit, on_countdown=on_countdown)
    conversation.intercept = service.intercept
    service.start()
    return service
