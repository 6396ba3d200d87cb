"""Config → the conversation's and the button's settings: ``[listen]``, ``[conversation]``
and ``[gpio]``'s button keys read once, here (the daemon and live reload both use these)."""

from __future__ import annotations

from edgevoice.audio.hearing.modes import ListenMode
from edgevoice.device.config import Config
from edgevoice.device.config.schema import GpioConfig
from edgevoice.device.hardware.gpio import ButtonSettings
from edgevoice.device.runtime.conversation import ConversationSettings


def conversation_settings(config: Config) -> ConversationSettings:
    return ConversationSettings(
        mode=ListenMode(config.listen.mode),
        push_to_talk=config.listen.button_mode == "hold",
        follow_up_s=config.listen.follow_up_s,
        session_idle_reset_s=config.conversation.session_idle_reset_s,
        failure_phrase=config.conversation.failure_phrase,
        log_transcripts=config.conversation.log_transcripts,
        speculate=config.llm.speculate,
        speculate_margin_ms=config.llm.speculate_margin_ms,
    )


def button_settings(gpio: GpioConfig) -> ButtonSettings:
    """The push button's pin and timing from ``[gpio]``."""
    return ButtonSettings(gpio.button_pin, gpio.button_pull_up, gpio.bounce_ms,
                          gpio.reset_hold_s, gpio.double_press_ms)
