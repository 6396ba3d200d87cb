"""provider = "local": the built-in agent. No server, no model, deterministic.

It greets, tells the time and date, repeats what it heard, answers a few canned
questions (some a few sentences long, so streaming and barge-in can be tried), and
handles "stop" (ends the conversation) and "start over" (a new session) through
:class:`~edgevoice.device.agents.actions.DeviceActions`. Replies stream in word-sized
deltas. It is what ``edgevoice demo`` and a fresh install use.

With ``[knowledge]`` on it answers from the device's knowledge base: the best chunk,
when its confidence clears ``[knowledge] answer_score`` (a Q/A entry's answer, or the
matching sentences of prose); a question it cannot answer gets "I don't know" and
what it can talk about, never a guess (docs/knowledge.md).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from edgevoice.device.agents.actions import DeviceActions
from edgevoice.device.agents.base import AgentClient, UserTurn
from edgevoice.device.config.schema import LlmConfig, LocalConfig
from edgevoice.device.knowledge.answer import choose_answer, dont_know
from edgevoice.device.knowledge.retrieval import content_words
from edgevoice.errors import EdgeVoiceError

_WORDS = re.compile(r"\S+\s*")


class Intent(StrEnum):
    STOP = "stop"
    START_OVER = "start_over"
    GREET = "greet"
    TIME = "time"
    DATE = "date"
    REPEAT_AFTER = "repeat_after"
    REPEAT_LAST = "repeat_last"
    NAME = "name"
    ABILITIES = "abilities"
    HOW_ARE_YOU = "how_are_you"
    STORY = "story"
    THANKS = "thanks"
    UNSURE = "unsure"
    ECHO = "echo"
    KNOWLEDGE = "knowledge"  # answered from the knowledge base
    DONT_KNOW = "dont_know"  # a question the knowledge base does not answer
    TIMER = "timer"  # set / how long is left / cancel, through DeviceActions.timers_action


# Intents that act on the conversation itself (and timers, which act on the device):
# never answered from knowledge.
CONTROL_INTENTS = frozenset({Intent.STOP, Intent.START_OVER, Intent.REPEAT_AFTER, Intent.REPEAT_LAST,
                             Intent.TIMER})


_PATTERNS: tuple[tuple[Intent, re.Pattern[str]], ...] = (
    (Intent.START_OVER, re.compile(r"\b(start over|start again|new conversation|reset)\b")),
    (Intent.STOP, re.compile(r"^(stop|stop it|stop talking|goodbye|bye|that'?s all|be quiet|"
                             r"never mind|cancel)\b")),
    (Intent.REPEAT_AFTER, re.compile(r"^(?:repeat after me|say)\s+(?P<rest>.+)$")),
    (Intent.REPEAT_LAST, re.compile(r"\b(what did i (just )?say|repeat that|say that again)\b")),
    (Intent.TIME, re.compile(r"\b(what time|the time|time is it)\b")),
    (Intent.DATE, re.compile(r"\b(date|what day|which day|today)\b")),
    (Intent.NAME, re.compile(r"\b(your name|who are you)\b")),
    (Intent.ABILITIES, re.compile(r"\b(what can you do|help|how do you work)\b")),
    (Intent.HOW_ARE_YOU, re.compile(r"\bhow are you\b")),
    (Intent.STORY, re.compile(r"\b(story|tell me something|talk to me|long answer)\b")),
    (Intent.THANKS, re.compile(r"\b(thanks|thank you|cheers)\b")),
    (Intent.GREET, re.compile(r"^(hello|hi|hey|good (morning|afternoon|evening)|greetings)\b")),
)

STORY = (
    "Once upon a time, a small board sat on a kitchen shelf and listened. "
    "It heard the kettle, the radio and the rain, and it waited patiently for someone to speak. "
    "When a voice finally asked it a question, it answered as quickly as it could, one sentence at "
    "a time. Whenever the person interrupted, it stopped at once and listened again, because "
    "listening was what it did best. And that is the end of the story."
)


@dataclass(frozen=True, slots=True)
class LocalReply:
    intent: Intent
    text: str
    source: str = ""  # the knowledge chunk's key, for a KNOWLEDGE reply


def classify(text: str) -> tuple[Intent, str]:
    """The intent of a turn and the text it carries (for repeat-after-me)."""
    clean = re.sub(r"[^\w\s']", " ", text.lower())
    clean = re.sub(r"\s+", " ", clean).strip()
    if not clean:
        return Intent.UNSURE, ""
    for intent, pattern in _PATTERNS:
        match = pattern.search(clean)
        if match:
            rest = match.groupdict().get("rest") or ""
            if intent is Intent.REPEAT_AFTER:
                # Keep the person's own words and punctuation, less the command.
                rest = re.sub(r"^\s*(repeat after me|say)[\s,:]*", "", text.strip(), flags=re.I)
            return intent, rest
    return Intent.ECHO, text.strip()


def asks_more_than(intent: Intent, text: str) -> bool:
    """Whether ``text`` holds content words besides what made it ``intent``: "what time is
    it" is only the clock, "what time does the café open" is a question for knowledge."""
    clean = re.sub(r"\s+", " ", re.sub(r"[^\w\s']", " ", text.lower())).strip()
    for candidate, pattern in _PATTERNS:
        if candidate is intent:
            match = pattern.search(clean)
            if match:
                clean = clean[: match.start()] + " " + clean[match.end():]
            break
    return bool(content_words(clean))


def compose(intent: Intent, rest: str, *, name: str, now: datetime, last_user: str) -> str:
    """The reply text for an intent (pure)."""
    match intent:
        case Intent.STOP:
            return "Okay, goodbye."
        case Intent.START_OVER:
            return "Okay, let's start over. What would you like to talk about?"
        case Intent.GREET:
            return (f"Hello! I'm {name}, the assistant built into this device. You can ask me the "
                    "time or the date, or ask me to tell you a story.")
        case Intent.TIME:
            return f"It is {now.strftime('%H:%M')}."
        case Intent.DATE:
            return f"Today is {now.strftime('%A')}, {now.day} {now.strftime('%B %Y')}."
        case Intent.REPEAT_AFTER:
            return rest if rest else "What should I say?"
        case Intent.REPEAT_LAST:
            return f"You said: {last_user}" if last_user else "You haven't said anything yet."
        case Intent.NAME:
            return f"I'm {name}, the small agent built into this device. I need no server and no model."
        case Intent.ABILITIES:
            return ("I can tell you the time and the date, repeat what you say, and tell a short story. "
                    "Say start over to begin a new conversation, or stop to end it. "
                    "For real answers, point me at an agent server in the configuration.")
        case Intent.HOW_ARE_YOU:
            return "I'm running well, thank you. How can I help?"
        case Intent.STORY:
            return STORY
        case Intent.THANKS:
            return "You're welcome."
        case Intent.UNSURE:
            return "Sorry, I didn't catch that. Could you say it again?"
        case Intent.KNOWLEDGE:
            return rest
        case Intent.DONT_KNOW:
            return dont_know(())
        case Intent.ECHO:
            return (f"You said: {rest}. I'm the built-in agent, so I can only tell the time and date, "
                    "repeat things and tell a story.")
        case Intent.TIMER:
            return "Say: set a timer for five minutes, how long is left, or cancel the timer."


def words(text: str) -> list[str]:
    """Word-sized deltas that join back to ``text``."""
    return _WORDS.findall(text)


class LocalAgentClient(AgentClient):
    provider = "local"

    def __init__(
        self,
        config: LocalConfig,
        llm: LlmConfig,
        actions: DeviceActions | None = None,
        *,
        now: Callable[[], datetime] | None = None,
        answer_score: float = 0.6,
    ) -> None:
        super().__init__(history_turns=llm.history_turns, max_reply_chars=llm.max_reply_chars)
        self._config = config
        self._actions = actions
        self._now = now or (lambda: datetime.now().astimezone())
        self.answer_score = answer_score

    async def _timer_reply(self, text: str) -> str | None:
        from edgevoice.device.timers.phrases import parse_timer_request

        request = parse_timer_request(text)
        if request is None or self._actions is None:
            return None
        try:
            result = await self._actions.timers_action(str(request.action), request.name, request.seconds)
        except EdgeVoiceError as err:
            return f"Sorry, I can't do that: {err.message}"
        return str(result.get("say", ""))

    def answer(self, turn: UserTurn) -> LocalReply:
        intent, rest = classify(turn.text)
        last_user = self.history[-1].user if self.history else ""
        knowledge = turn.knowledge
        if knowledge is not None and intent not in CONTROL_INTENTS and (
                intent is Intent.ECHO or asks_more_than(intent, turn.text)):
            found = choose_answer(knowledge, answer_score=self.answer_score)
            if found is not None:
                return LocalReply(Intent.KNOWLEDGE, found.text, found.passage.key)
            # A question beyond the built-in skill's own words ("what time is the football
            # on") that knowledge cannot answer gets "I don't know", not the clock.
            if not turn.low_confidence:
                return LocalReply(Intent.DONT_KNOW, dont_know(knowledge.topics))
        if turn.low_confidence and intent is Intent.ECHO:
            intent = Intent.UNSURE
        text = compose(intent, rest, name=self._config.name, now=self._now(), last_user=last_user)
        if knowledge is not None and knowledge.topics and intent in (Intent.GREET, Intent.ABILITIES):
            text = f"{text} {dont_know(knowledge.topics).split('. ', 1)[1]}"
        return LocalReply(intent, text)

    async def _stream(self, turn: UserTurn) -> AsyncGenerator[str, None]:
        timer_reply = await self._timer_reply(turn.text)
        reply = LocalReply(Intent.TIMER, timer_reply) if timer_reply is not None else self.answer(turn)
        if reply.intent is Intent.STOP and self._actions is not None:
            await self._actions.end_conversation()
        elif reply.intent is Intent.START_OVER:
            if self._actions is not None:
                await self._actions.start_over()
            else:
                self.reset_session()
        delay = self._config.word_delay_ms / 1000
        for index, word in enumerate(words(reply.text)):
            if index:
                await asyncio.sleep(delay)
            yield word
