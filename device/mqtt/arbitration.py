"""Wake-word arbitration over MQTT: the transport around :mod:`.election`.

Devices of one ``[device] room`` share the topic ``<p>/room/<room>/wake`` (QoS 0, never
retained). On it they say who they are (``hello`` on connecting and every minute,
answered by ``here``; ``bye`` on a clean stop), claim each wake word they hear
(``claim`` with ``score`` = wake probability × speech level) and say what they decided
(``answered`` / ``stood_down``). A device waits for the
others' claims at most ``[arbitration] window_ms``, and only while some device it knows
in the room has not claimed yet; a winner also waits for the word of each device it
beat (a second window at most); with no broker, or nobody else in the room, it answers
at once. Runs on the event loop; paho's thread hands messages over.
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
    ) -> None:
        """``publish(payload)`` sends on ``topic`` and returns whether the broker is
        connected (a claim that cannot be sent is not waited for)."""
        self.device_id = device_id
        self.topic = topic
        self.window_ms = window_ms
        self._publish = publish
        self._clock = clock
        self.room = Room(device_id, expiry_s=PEER_EXPIRY_S)
        self._election: Election | None = None
        self._changed: asyncio.Event | None = None
        self._hello_task: asyncio.Task[None] | None = None
        self.elections = 0
        self.stood_down = 0

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

    # --- a wake word --------------------------------------------------------------------

    async def claim(self, score: float) -> Verdict:
        """Claim the wake word this device just heard; the verdict once known."""
        now = self._clock()
        me = Claim(self.device_id, float(score), now)
        election = self.room.open(me, self.window_ms / 1000)
        self.elections += 1
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
                try:
                    await asyncio.wait_for(self._changed.wait(), remaining)
                except TimeoutError:
                    pass
        finally:
            self._election = None
        self._send({"type": "answered" if verdict is Verdict.ANSWER else "stood_down"})
        if verdict is Verdict.STAND_DOWN:
            self.stood_down += 1
            _LOGGER.info("wake word: standing down for %s", election.winner().device)
        return verdict
