"""Wake-word arbitration, the pure part: which device of a room answers.

Every device that hears the wake word claims it with ``score`` = wake probability ×
speech level; the highest claim wins, ties to the lowest device id. A device decides as
soon as it can: at once when no other device is known in the room; as soon as a
higher claim arrives (it lost); as soon as every known device of the room has claimed
(it knows the winner); else when its window closes, with the claims it has.

No clock and no I/O: times (seconds, any monotonic origin) are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Verdict(StrEnum):
    ANSWER = "answer"
    STAND_DOWN = "stand_down"


@dataclass(frozen=True, slots=True)
class Claim:
    device: str
    score: float
    at: float  # when it was made (own) or received (others'), seconds

    def beats(self, other: Claim) -> bool:
        """Higher score wins; equal scores go to the lower device id."""
        if self.score != other.score:
            return self.score > other.score
        return self.device < other.device


@dataclass(slots=True)
class Election:
    """One wake word, seen from one device."""

    me: Claim
    peers: frozenset[str]  # the other devices known in the room
    window_s: float
    claims: dict[str, Claim] = field(default_factory=dict)

    @property
    def deadline(self) -> float:
        return self.me.at + self.window_s

    def add(self, claim: Claim) -> None:
        """A claim from another device: counted when it is near enough in time to ours to
        be the same wake word (within one window either side)."""
        if claim.device == self.me.device or abs(claim.at - self.me.at) > self.window_s:
            return
        best = self.claims.get(claim.device)
        if best is None or claim.score > best.score:
            self.claims[claim.device] = claim

    def winner(self) -> Claim:
        best = self.me
        for claim in self.claims.values():
            if claim.beats(best):
                best = claim
        return best

    def decide(self, now: float) -> Verdict | None:
        """The verdict, or None to keep waiting (until :attr:`deadline`)."""
        if any(claim.beats(self.me) for claim in self.claims.values()):
            return Verdict.STAND_DOWN
        if not self.peers or self.peers <= set(self.claims) or now >= self.deadline:
            return Verdict.ANSWER
        return None


@dataclass(slots=True)
class Room:
    """Who else is in the room (from their presence messages) and the claims that came
    in recently — a claim may arrive before this device's own detection."""

    me: str
    expiry_s: float = 90.0
    seen: dict[str, float] = field(default_factory=dict)  # device -> last heard of
    recent: list[Claim] = field(default_factory=list)

    def present(self, device: str, now: float) -> None:
        if device != self.me:
            self.seen[device] = now

    def gone(self, device: str) -> None:
        self.seen.pop(device, None)

    def peers(self, now: float) -> frozenset[str]:
        return frozenset(d for d, at in self.seen.items() if now - at <= self.expiry_s)

    def heard(self, claim: Claim, horizon_s: float) -> None:
        if claim.device == self.me:
            return
        self.present(claim.device, claim.at)
        self.recent = [c for c in self.recent if claim.at - c.at <= horizon_s]
        self.recent.append(claim)

    def open(self, me: Claim, window_s: float) -> Election:
        """An election for this device's own claim, with the claims already in."""
        election = Election(me, self.peers(me.at), window_s)
        for claim in self.recent:
            election.add(claim)
        return election
