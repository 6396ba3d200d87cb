"""Wake-word arbitration over MQTT: the transport around :mod:`.election`.

Devices of one ``[device] room`` share the topic ``<p>/room/<room>/wake`` (QoS 0, never
retained). On it they say who they are (``hello`` on connecting and every minute,
answered by ``here``; ``bye`` on a clean stop), claim each wake word they hear
(``claim`` with ``score`` = wake probability × speech level) and say what they decided
(``answered`` / ``stood_down``). A device waits for the
others' claims at most ``[arbitration] window_ms``, and only while some device it knows
in the room has not claimed yet; a winner also waits for the word of each device it
beat (a second window at most); with no broker, or nobody else in the room, it answers
at once. A device that has not heard the wake word when a claim arrives, and could not
beat it (``claim_bound``), says ``pass`` with that bound at once, so the winner need not
wait for its detector; it then stands down if it hears the wake word after all. Runs on
the event loop; paho's thread hands messages over.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from edgevoice.device.mqtt.election import Claim, Election, Room, Verdict
from edgevoice.device.mqtt.topics import check_level
from edgevoice.device.runtime.tasks import wait_event

_LOGGER = logging.getLogger(__name__)

HELLO_EVERY_S = 60.0
PEER_EXPIRY_S = 150.0


def room_topic(prefix: str, room: str) -> str:
    return f"{prefix}/room/{check_level(room, 'device room')}/wake"


class WakeArbiter:
    def __init__(
        self,
        *,
        device_id: str,
        topic: str,
        window_ms: int,
        publish: Callable[[bytes], bool],
        clock: Callable[[], float] = time.monotonic,
        claim_bound: Callable[[], float] | None = None,
    ) -> None:
        """``publish(payload)`` sends on ``topic`` and returns whether the broker is
        connected (a claim that cannot be sent is not waited for). ``claim_bound()`` is
        the highest claim this device could make for a wake word being said now (None:
        never pass; it then claims or stays silent as the others wait)."""
        self.device_id = device_id
        self.topic = topic
        self.window_ms = window_ms
        self._publish = publish
        self._clock = clock
        self.claim_bound = claim_bound
        self.room = Room(device_id, expiry_s=PEER_EXPIRY_S)
        self._election: Election | None = None
        self._changed: asyncio.Event | None = None
        self._hello_task: asyncio.Task[None] | None = None
        self.elections = 0
        self.stood_down = 0
        self.passes = 0
        self.last_passed = False  # the last claim() stood down because this device had passed
        self.last_pass_bound: float | None = None  # the bound it last passed with

    # --- lifecycle (event loop) ---------------------------------------------------------

    def start(self) -> None:
        self._changed = asyncio.Event()
        self._hello_task = asyncio.create_task(self._hello_loop(), name="arbitration-hello")

    async def stop(self) -> None:
        if self._hello_task is not None:
            self._hello_task.cancel()
            await asyncio.gather(self._hello_task, return_exceptions=True)
        self._send({"type": "bye"})

    def connected(self) -> None:
        """The broker (re)connected: say hello so the room learns about us, and we about it."""
        self._send({"type": "hello"})

    async def _hello_loop(self) -> None:
        while True:
            await asyncio.sleep(HELLO_EVERY_S)
            self._send({"type": "hello"})

    def _send(self, body: dict[str, Any]) -> bool:
        payload = json.dumps({**body, "device": self.device_id}, separators=(",", ":")).encode()
        return self._publish(payload)

    # --- messages in (event loop) -------------------------------------------------------

    def on_message(self, payload: bytes) -> None:
        try:
            body = json.loads(payload)
            kind, device = body["type"], str(body["device"])
        except (ValueError, KeyError, TypeError):
            _LOGGER.debug("ignoring a malformed room message: %r", payload[:80])
            return
        if device == self.device_id:
            return
        now = self._clock()
        if kind == "hello":
            self.room.present(device, now)
            self._send({"type": "here"})
        elif kind == "here":
            self.room.present(device, now)
        elif kind == "bye":
            self.room.gone(device)
        elif kind in ("answered", "stood_down"):
            verdict = Verdict.ANSWER if kind == "answered" else Verdict.STAND_DOWN
            self.room.decided(device, verdict, now, horizon_s=2 * self.window_ms / 1000)
            if self._election is not None:
                self._election.told(device, verdict)
                if self._changed is not None:
                    self._changed.set()
        elif kind == "claim":
            try:
                score = float(body["score"])
            except (KeyError, TypeError, ValueError):
                return
            claim = Claim(device, score, now)
            self.room.heard(claim, horizon_s=2 * self.window_ms / 1000)
            if self._election is not None:
                self._election.add(claim)
                if self._changed is not None:
                    self._changed.set()
            else:
                self._maybe_pass(claim, now)
        elif kind == "pass":
            try:
                bound = float(body["bound"])
            except (KeyError, TypeError, ValueError):
                return
            self.room.heard_pass(device, bound, now, horizon_s=2 * self.window_ms / 1000)
            if self._election is not None:
                self._election.passed(device, bound)
                if self._changed is not None:
                    self._changed.set()

    def _maybe_pass(self, claim: Claim, now: float) -> None:
        bound = self.claim_bound() if self.claim_bound is not None else None
        if not self.room.should_pass(claim, bound):
            return
        assert bound is not None
        self.room.passed(now, horizon_s=2 * self.window_ms / 1000)
        self.passes += 1
        self.last_pass_bound = bound
        self._send({"type": "pass", "bound": round(bound, 6)})
        _LOGGER.debug("wake word: passing on %s's claim %.4g (could claim %.4g at most)",
                      claim.device, claim.score, bound)

    # --- a wake word --------------------------------------------------------------------

    async def claim(self, score: float) -> Verdict:
        """Claim the wake word this device just heard; the verdict once known."""
        now = self._clock()
        me = Claim(self.device_id, float(score), now)
        election = self.room.open(me, self.window_ms / 1000)
        self.elections += 1
        self.last_passed = election.bound_by_pass
        if election.bound_by_pass:  # we passed on a better claim: keep our word, say nothing
            self.stood_down += 1
            _LOGGER.info("wake word: standing down (passed on %s's claim)", election.winner().device)
            return Verdict.STAND_DOWN
        if not self._send({"type": "claim", "score": round(float(score), 6)}) or self.window_ms <= 0:
            return Verdict.ANSWER  # no broker: answer exactly as without arbitration
        self._election = election
        try:
            while (verdict := election.decide(self._clock())) is None:
                assert self._changed is not None
                self._changed.clear()
                remaining = election.next_check(self._clock()) - self._clock()
                if remaining <= 0:
                    continue
                await wait_event(self._changed, remaining)
        finally:
            self._election = None
        self._send({"type": "answered" if verdict is Verdict.ANSWER else "stood_down"})
        if verdict is Verdict.STAND_DOWN:
            self.stood_down += 1
            _LOGGER.info("wake word: standing down for %s", election.winner().device)
        return verdict
