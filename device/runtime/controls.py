"""Conversation controls the device handles itself, whatever the agent.

"Start over" and "stop" must work with every provider: the HTTP agent, OpenAI-compatible
servers, Ollama and Home Assistant would otherwise get them as questions (and answer
"Sure! What would you like to start over?"). The device recognises them when they are
the whole utterance — "let's start over", "stop please", "goodbye" — never inside a
question ("how do I reset my router" goes to the agent), and acts on its own session.

Pure: text in, a :class:`Control` out.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Control(StrEnum):
    START_OVER = "start_over"  # a new session with the agent, keep listening
    STOP = "stop"  # end the conversation: a new session, no follow-up window


# Words around a control that do not change it.
_LEAD = r"(?:(?:ok(?:ay)?|hey|please|so|and|now|just|oh|can we|could we|let'?s|let us|i want to|"
_LEAD += r"we need to|i'?d like to)\s+)*"
_TAIL = r"(?:\s+(?:please|now|then|thanks|thank you|ok(?:ay)?))*"
_PHRASES: tuple[tuple[Control, str], ...] = (
    (Control.START_OVER, r"(?:start (?:over|again|afresh)|new conversation|begin again|"
                         r"reset(?: the conversation)?|forget (?:everything|all that|that))"),
    (Control.STOP, r"(?:stop(?: it| talking| listening)?|goodbye|good bye|bye(?: bye)?|that'?s all|"
                   r"that is all|be quiet|never mind|nevermind|cancel|shut up|quiet|enough)"),
)
_PATTERNS = tuple((control, re.compile(rf"^{_LEAD}{phrase}{_TAIL}$")) for control, phrase in _PHRASES)

CONFIRMATION: dict[Control, str] = {
    Control.START_OVER: "Okay, let's start over.",
    Control.STOP: "Okay, goodbye.",
}


def normalise(text: str) -> str:
    clean = re.sub(r"[^\w\s']", " ", text.lower())
    return re.sub(r"\s+", " ", clean).strip()


def control_of(text: str) -> Control | None:
    """The control ``text`` is, when the whole utterance is one; else None."""
    clean = normalise(text)
    if not clean:
        return None
    for control, pattern in _PATTERNS:
        if pattern.match(clean):
            return control
    return None
