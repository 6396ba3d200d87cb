"""What the LEDs show in each conversation state (the daemon, the timer and arbitration
hooks all restore it after showing something else)."""

from __future__ import annotations

from edgevoice.device.hardware.gpio import LedPattern
from edgevoice.device.runtime.state import State

LED_FOR_STATE = {
    # Off when idle in every listen mode (wake word, always, button): the LED ring shows a
    # running timer's countdown only over an otherwise dark ring.
    State.IDLE: LedPattern.OFF,
    State.LISTENING: LedPattern.LISTENING,
    State.THINKING: LedPattern.THINKING,
    State.SPEAKING: LedPattern.SPEAKING,
    State.MUTED: LedPattern.MUTED,
}
