"""The operator desk: the broker between the ``operator`` agent and the people at /operator.

The agent opens a turn with what the visitor said; every connected operator is told; the
first answer wins and the others are told it was taken. A turn nobody answers in time,
or one left when the last operator disconnects, is closed and the agent's fallback
answers. Only the event-loop thread calls in here; messages to operators are plain
dicts handed to each operator's sink (the console's WebSocket queues them).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_LOGGER = logging.getLogger(__name__)

Sink = Callable[[dict[str, Any]], None]


class NoOperator(Exception):
    """Nobody is at the desk (or the last operator left while the turn waited)."""


@dataclass(eq=False, slots=True)
class PendingTurn:
    turn_id: str
    text: str
    low_confidence: bool
    timeout_s: float
    answer: asyncio.Future[str] = field(repr=False)
    answered_by: str = ""

    def as_message(self) -> dict[str, Any]:
        return {"type": "operator.turn", "turn_id": self.turn_id, "text": self.text,
                "low_confidence": self.low_confidence, "timeout_s": self.timeout_s}


class OperatorDesk:
    def __init__(self, quick_replies: tuple[str, ...] = ()) -> None:
        self.quick_replies = quick_replies
        self._sinks: dict[str, Sink] = {}
        self._ids = itertools.count(1)
        self._turn_ids = itertools.count(1)
        self.pending: PendingTurn | None = None
        self._answered: PendingTurn | None = None  # so a late answer hears it was taken

    # --- operators --------------------------------------------------------------

    @property
    def connected(self) -> int:
        return len(self._sinks)

    def connect(self, sink: Sink) -> str:
        """Register an operator; returns its id. It is told about a turn already waiting."""
        operator_id = f"operator-{next(self._ids)}"
        self._sinks[operator_id] = sink
        sink({"type": "operator.hello", "operator_id": operator_id,
              "quick_replies": list(self.quick_replies), "operators": self.connected})
        if self.pending is not None and not self.pending.answer.done():
            sink(self.pending.as_message())
        self._broadcast({"type": "operator.count", "operators": self.connected})
        return operator_id

    def disconnect(self, operator_id: str) -> None:
        if self._sinks.pop(operator_id, None) is None:
            return
        self._broadcast({"type": "operator.count", "operators": self.connected})
        pending = self.pending
        if not self._sinks and pending is not None and not pending.answer.done():
            pending.answer.set_exception(NoOperator("the last operator left"))

    def _broadcast(self, message: dict[str, Any], *, skip: str = "") -> None:
        for operator_id, sink in list(self._sinks.items()):
            if operator_id != skip:
                sink(message)

    # --- turns (the agent's side) ------------------------------------------------

    def open_turn(self, text: str, *, low_confidence: bool, timeout_s: float) -> PendingTurn:
        if not self._sinks:
            raise NoOperator("no operator is connected")
        if self.pending is not None and not self.pending.answer.done():
            self.close_turn(self.pending, "superseded")
        loop = asyncio.get_running_loop()
        turn = PendingTurn(f"op-{next(self._turn_ids)}", text, low_confidence, timeout_s,
                           loop.create_future())
        self.pending = turn
        self._broadcast(turn.as_message())
        return turn

    def close_turn(self, turn: PendingTurn, reason: str) -> None:
        """The agent gave up on ``turn`` (``timeout``, ``cancelled``, ``superseded``)."""
        if not turn.answer.done():
            turn.answer.cancel()
        if self.pending is turn:
            self.pending = None
        if not turn.answered_by:
            self._broadcast({"type": "operator.closed", "turn_id": turn.turn_id, "reason": reason})

    def heard(self, turn_id: str, heard_text: str, interrupted: bool) -> None:
        """What the visitor actually heard of the answer to ``turn_id``."""
        self._broadcast({"type": "operator.heard", "turn_id": turn_id, "heard_text": heard_text,
                         "interrupted": interrupted})

    # --- answers (the operators' side) --------------------------------------------

    def answer(self, operator_id: str, turn_id: str, text: str) -> dict[str, Any]:
        """An operator's answer; ``text`` empty is "say nothing". First answer wins."""
        turn = self.pending
        if (turn is None or turn.turn_id != turn_id) and self._answered is not None \
                and self._answered.turn_id == turn_id:
            turn = self._answered
        if turn is None or turn.turn_id != turn_id:
            return {"ok": False, "error": {"code": "no_such_turn",
                                           "message": f"turn {turn_id!r} is not waiting for an answer"}}
        if turn.answered_by or turn.answer.done():
            return {"ok": False, "error": {"code": "already_answered",
                                           "message": f"{turn.answered_by or 'the fallback'} "
                                                      "already answered this turn"}}
        turn.answered_by = operator_id
        turn.answer.set_result(text)
        self.pending = None
        self._answered = turn
        self._broadcast({"type": "operator.taken", "turn_id": turn_id, "by": operator_id,
                         "text": text, "say_nothing": not text})
        _LOGGER.info("operator desk: %s answered %s%s", operator_id, turn_id,
                     " (say nothing)" if not text else "")
        return {"ok": True, "turn_id": turn_id}
