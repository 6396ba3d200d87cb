"""Wake-word arbitration, the pure part: which device of a room answers.

Every device that hears the wake word claims it with ``score`` = wake probability ×
speech level; the highest claim wins, ties to the lowest device id. Each device says
what it decided (``answered`` / ``stood down``) once it knows. A device decides as soon
as it can: at once when no other device is known in the room; as soon as a higher claim
arrives, or a device says it answered (it lost); when every known device of the room has
claimed and it is the best — but a device whose claim came in *before* its own may
already have decided (it could not have seen ours in time), so it also waits for each of
those to say it stood down; else when its window closes: it answers when nobody claimed
before it, and stands down when somebody did and never said it stood down (that one
answered).

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
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # what the others decided

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

    def told(self, device: str, verdict: Verdict) -> None:
        """Another device said what it decided."""
        if device != self.me.device:
            self.verdicts[device] = verdict

    def winner(self) -> Claim:
        best = self.me
        for claim in self.claims.values():
            if claim.beats(best):
                best = claim
        return best

    def decide(self, now: float) -> Verdict | None:
        """The verdict, or None to keep waiting (until :attr:`deadline`)."""
        if Verdict.ANSWER in self.verdicts.values():
            return Verdict.STAND_DOWN
        if any(claim.beats(self.me) for claim in self.claims.values()):
            return Verdict.STAND_DOWN
        # Claims that came in before ours: their makers decide without waiting for us.
        earlier = [c.device for c in self.claims.values() if c.at <= self.me.at]
        undecided = [d for d in earlier if self.verdicts.get(d) is not Verdict.STAND_DOWN]
        everyone = not self.peers or self.peers <= set(self.claims)
        if everyone and not undecided:
            return Verdict.ANSWER
        if now >= self.deadline:
            return Verdict.STAND_DOWN if undecided else Verdict.ANSWER
        return None


@dataclass(slots=True)
class Room:
    """Who else is in the room (from their presence messages) and the claims that came
    in recently — a claim may arrive before this device's own detection."""

    me: str
    expiry_s: float = 90.0
    seen: dict[str, float] = field(default_factory=dict)  # device -> last heard of
    recent: list[Claim] = field(default_factory=list)
    recent_verdicts: list[tuple[str, Verdict, float]] = field(default_factory=list)

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

    def decided(self, device: str, verdict: Verdict, at: float, horizon_s: float) -> None:
        if device == self.me:
            return
        self.recent_verdicts = [v for v in self.recent_verdicts if at - v[2] <= horizon_s]
        self.recent_verdicts.append((device, verdict, at))

    def open(self, me: Claim, window_s: float) -> Election:
        """An election for this device's own claim, with the claims and verdicts already
        in. A claim older than one window before ours belongs to a device that has
        decided by now: ours counts as later than it (it is an earlier claim)."""
        election = Election(me, self.peers(me.at), window_s)
        for claim in self.recent:
            if 0 <= me.at - claim.at <= 2 * window_s:
                election.claims.setdefault(claim.device, claim)
        for device, verdict, at in self.recent_verdicts:  # said at most one window ago
            if 0 <= me.at - at <= window_s:
                election.told(device, verdict)
        return election
