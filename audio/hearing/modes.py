"""How the device decides that a turn is the person's: the listen modes, shared by the
listener and the conversation's state machine (defined once, here)."""

from __future__ import annotations

from enum import StrEnum


class ListenMode(StrEnum):
    ALWAYS = "always"  # every detected turn is a user turn
    WAKEWORD = "wakeword"  # a turn follows the wake word (or falls in a follow-up window)
    BUTTON = "button"  # push-to-talk


class ButtonMode(StrEnum):
    HOLD = "hold"  # talk while the button is held
    PRESS = "press"  # press to start; the VAD (or another press) ends the turn
