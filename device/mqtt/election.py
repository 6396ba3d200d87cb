"""Wake-word arbitration, the pure part: which device of a room answers.

Every device that hears the wake word claims it with ``score`` = wake probability ×
speech level; the highest claim wins, ties to the lowest device id. Each device says
what it decided (``answered`` / ``stood down``) once it knows. A device decides as soon
as it can:

- it stands down as soon as a higher claim arrives, or a device says it answered;
- it answers at once when no other device is known in the room;
- otherwise it answers once every device whose claim it beats has said it stood down,
  and either every known device of the room has claimed or its window has closed.

Waiting for the losers' word is what makes one answer hold under broker latency and
jitter. A loser that decided before our claim reached it (its window closed first)
answered, and says so; we then stand down. Which of two claims left first cannot be
told from when they arrived, so every loser is waited for, not only the "earlier" ones.
A loser that stays silent for a second window (gone with its connection) is not waited
for any longer: the device answers rather than leave the room silent.

A device that has not heard the wake word (yet) when a claim arrives can **pass**: it
says the highest claim it could still make (its ``bound``: a wake probability of 1 ×
its own speech level with a margin), when that is below the claim. A device waits for
those who passed below its own claim no more than for those who stood down, so the winner
need not wait for a quieter device's detector to catch up (which took up to ~130 ms).
A device that passed keeps its word: if it then hears the wake word itself within two
windows, it stands down without claiming, so a bound that proved low costs which device
answers, never that one does.

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
    passes: dict[str, float] = field(default_factory=dict)  # device -> the bound it passed with
    bound_by_pass: bool = False  # this device passed on a claim of this wake word

    @property
    def deadline(self) -> float:
        """When the window closes: a known device that has not claimed by then did not hear it."""
        return self.me.at + self.window_s

    @property
    def give_up_at(self) -> float:
        """When a beaten claimant that never said what it decided is taken for gone."""
        return self.me.at + 2 * self.window_s

    def next_check(self, now: float) -> float:
        """When :meth:`decide` may change its mind without a new message."""
        return self.deadline if now < self.deadline else self.give_up_at

    def add(self, claim: Claim) -> None:
        """A claim from another device: counted when it is near enough in time to ours to
        be the same wake word (within one window either side)."""
        if claim.device == self.me.device or abs(claim.at - self.me.at) > self.window_s:
            return
        best = self.claims.get(claim.device)
        if best is None or claim.score > best.score:
            self.claims[claim.device] = claim

    def told(self, device: str, verdict: Verdict) -> None:
        """Another device said what it decided about its claim. A device's claim always
        arrives before its verdict (one connection, one broker, in order), so a verdict
        from a device with no claim here is about another wake word."""
        if device in self.claims:
            self.verdicts[device] = verdict

    def passed(self, device: str, bound: float) -> None:
        """Another device passed: it will not claim above ``bound`` for this wake word."""
        if device != self.me.device and device not in self.claims:
            self.passes[device] = min(bound, self.passes.get(device, bound))

    def _passed_below_me(self) -> set[str]:
        return {device for device, bound in self.passes.items() if bound < self.me.score}

    def winner(self) -> Claim:
        best = self.me
        for claim in self.claims.values():
            if claim.beats(best):
                best = claim
        return best

    def decide(self, now: float) -> Verdict | None:
        """The verdict, or None to keep waiting (until :meth:`next_check`)."""
        if self.bound_by_pass or Verdict.ANSWER in self.verdicts.values():
            return Verdict.STAND_DOWN
        if any(claim.beats(self.me) for claim in self.claims.values()):
            return Verdict.STAND_DOWN
        unconfirmed = [d for d in self.claims if self.verdicts.get(d) is not Verdict.STAND_DOWN]
        everyone = not self.peers or self.peers <= set(self.claims) | self._passed_below_me()
        if not unconfirmed and (everyone or now >= self.deadline):
            return Verdict.ANSWER
        if now >= self.give_up_at:
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
    recent_verdicts: list[tuple[str, Verdict, float]] = field(default_factory=list)
    recent_passes: list[tuple[str, float, float]] = field(default_factory=list)  # device, bound, at
    my_passes: list[float] = field(default_factory=list)  # when this device passed

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

    def should_pass(self, claim: Claim, bound: float | None) -> bool:
        """Whether to pass on ``claim`` (a claim from another device, while this one is
        in no election of its own): only when the highest claim it could still make is
        below it."""
        return claim.device != self.me and bound is not None and bound < claim.score

    def passed(self, at: float, horizon_s: float) -> None:
        """This device passed at ``at``: it will stand down on its own detection."""
        self.my_passes = [t for t in self.my_passes if at - t <= horizon_s]
        self.my_passes.append(at)

    def heard_pass(self, device: str, bound: float, at: float, horizon_s: float) -> None:
        if device == self.me:
            return
        self.present(device, at)
        self.recent_passes = [p for p in self.recent_passes if at - p[2] <= horizon_s]
        self.recent_passes.append((device, bound, at))

    def open(self, me: Claim, window_s: float) -> Election:
        """An election for this device's own claim, with the claims and verdicts that
        arrived before it (within two windows: the claimant may still be waiting on others)."""
        election = Election(me, self.peers(me.at), window_s)
        for claim in self.recent:
            if 0 <= me.at - claim.at <= 2 * window_s:
                election.claims.setdefault(claim.device, claim)
        for device, verdict, at in self.recent_verdicts:
            claimed = election.claims.get(device)
            if claimed is not None and at >= claimed.at:  # about that claim, not an older one
                election.told(device, verdict)
        for device, bound, at in self.recent_passes:
            if 0 <= me.at - at <= 2 * window_s:
                election.passed(device, bound)
        election.bound_by_pass = any(0 <= me.at - t <= 2 * window_s for t in self.my_passes)
        return election
