"""The pure election: who answers, and when each device may decide."""

from __future__ import annotations

from edgevoice.device.mqtt.election import Claim, Room, Verdict


def test_the_highest_claim_answers_and_ties_go_to_the_lowest_id() -> None:
    assert Claim("b", 0.9, 0.0).beats(Claim("a", 0.5, 0.0))
    assert Claim("a", 0.5, 0.0).beats(Claim("b", 0.5, 0.0))
    assert not Claim("b", 0.5, 0.0).beats(Claim("a", 0.5, 0.0))


def test_alone_in_the_room_answers_at_once() -> None:
    election = Room("a").open(Claim("a", 0.1, 10.0), window_s=0.25)
    assert election.decide(10.0) is Verdict.ANSWER


def test_waits_only_for_known_peers_then_decides_early() -> None:
    room = Room("a")
    room.present("b", 0.0)
    room.present("c", 0.0)
    election = room.open(Claim("a", 0.6, 10.0), window_s=0.25)
    assert election.decide(10.01) is None
    election.add(Claim("b", 0.4, 10.02))
    election.told("b", Verdict.STAND_DOWN)
    assert election.decide(10.02) is None  # c has not claimed yet
    election.add(Claim("c", 0.5, 10.03))
    assert election.decide(10.03) is None  # c has not said it stood down
    election.told("c", Verdict.STAND_DOWN)
    assert election.decide(10.04) is Verdict.ANSWER  # everyone claimed and gave way: no more wait


def test_a_higher_claim_stands_down_at_once() -> None:
    room = Room("a")
    room.present("b", 0.0)
    room.present("c", 0.0)
    election = room.open(Claim("a", 0.6, 10.0), window_s=0.25)
    election.add(Claim("c", 0.9, 10.01))
    assert election.decide(10.01) is Verdict.STAND_DOWN
    assert election.winner().device == "c"


def test_a_claim_that_arrived_before_our_own_detection_counts() -> None:
    room = Room("b")
    room.heard(Claim("a", 0.8, 9.9), horizon_s=0.5)
    election = room.open(Claim("b", 0.7, 10.0), window_s=0.25)
    assert election.decide(10.0) is Verdict.STAND_DOWN


def test_the_window_closes_when_a_peer_never_claims() -> None:
    room = Room("a")
    room.present("b", 0.0)
    election = room.open(Claim("a", 0.2, 10.0), window_s=0.25)
    assert election.decide(10.2) is None
    assert election.decide(10.25) is Verdict.ANSWER


def test_old_claims_and_departed_peers_do_not_count() -> None:
    room = Room("a", expiry_s=90.0)
    room.heard(Claim("b", 0.9, 1.0), horizon_s=0.5)  # a wake word long ago
    room.present("c", 0.0)
    room.gone("c")
    election = room.open(Claim("a", 0.1, 10.0), window_s=0.25)
    assert election.peers == frozenset({"b"})
    assert election.claims == {}  # the old 0.9 is another wake word
    election.add(Claim("b", 0.05, 10.01))
    election.told("b", Verdict.STAND_DOWN)
    assert election.decide(10.01) is Verdict.ANSWER
    assert Room("a", expiry_s=5.0).peers(0.0) == frozenset()
    stale = Room("a", expiry_s=5.0)
    stale.present("b", 0.0)
    assert stale.peers(6.0) == frozenset()


def test_an_earlier_claimer_must_say_it_stood_down_before_a_better_later_one_answers() -> None:
    room = Room("b")
    room.present("a", 0.0)
    room.heard(Claim("a", 0.3, 9.95), horizon_s=0.5)  # a claimed before b heard the wake word
    election = room.open(Claim("b", 0.9, 10.0), window_s=0.25)
    assert election.decide(10.0) is None  # a may have decided without seeing b's claim
    election.told("a", Verdict.STAND_DOWN)
    assert election.decide(10.01) is Verdict.ANSWER


def test_a_device_that_answered_wins_even_against_a_better_late_claim() -> None:
    room = Room("b")
    room.present("a", 0.0)
    room.heard(Claim("a", 0.3, 9.7), horizon_s=0.5)
    room.decided("a", Verdict.ANSWER, 9.95, horizon_s=0.5)
    election = room.open(Claim("b", 0.9, 10.0), window_s=0.25)
    assert election.decide(10.0) is Verdict.STAND_DOWN


def test_a_beaten_claim_that_arrived_after_ours_must_still_give_way() -> None:
    # Under broker jitter the arrival order is not the sending order: c's claim left
    # first but arrived after b's own, and c's window closed before b's claim reached
    # it, so c answered. b beats c on score and must hear that before answering.
    room = Room("b")
    room.present("a", 0.0)
    room.present("c", 0.0)
    election = room.open(Claim("b", 0.9, 10.0), window_s=0.25)
    election.add(Claim("c", 0.2, 10.005))
    election.add(Claim("a", 0.1, 10.07))
    election.told("a", Verdict.STAND_DOWN)
    assert election.decide(10.08) is None
    election.told("c", Verdict.ANSWER)
    assert election.decide(10.2) is Verdict.STAND_DOWN


def test_a_beaten_claimant_that_never_says_anything_is_waited_for_a_second_window() -> None:
    room = Room("b")
    room.present("a", 0.0)
    room.heard(Claim("a", 0.3, 9.95), horizon_s=0.5)
    election = room.open(Claim("b", 0.9, 10.0), window_s=0.25)
    assert election.decide(10.25) is None
    assert election.next_check(10.25) == 10.5
    assert election.decide(10.5) is Verdict.ANSWER  # a is gone: the room is not left silent


def test_the_window_closes_with_every_claimant_confirmed_when_a_peer_never_claims() -> None:
    room = Room("a")
    room.present("b", 0.0)
    room.present("c", 0.0)
    election = room.open(Claim("a", 0.6, 10.0), window_s=0.25)
    election.add(Claim("b", 0.4, 10.02))
    election.told("b", Verdict.STAND_DOWN)
    assert election.next_check(10.1) == 10.25
    assert election.decide(10.25) is Verdict.ANSWER  # c did not hear it


def test_a_verdict_given_before_our_claim_about_a_claim_from_then_counts() -> None:
    room = Room("b")
    room.present("a", 0.0)
    room.heard(Claim("a", 0.3, 9.6), horizon_s=0.5)
    room.decided("a", Verdict.STAND_DOWN, 9.65, horizon_s=0.5)  # more than one window ago
    election = room.open(Claim("b", 0.9, 10.0), window_s=0.25)
    assert election.decide(10.0) is Verdict.ANSWER


def test_a_verdict_about_an_older_wake_word_does_not_count() -> None:
    room = Room("b")
    room.present("a", 0.0)
    room.decided("a", Verdict.ANSWER, 9.9, horizon_s=0.5)  # its claim was long ago
    room.heard(Claim("a", 0.3, 9.95), horizon_s=0.5)  # a's claim for this wake word
    election = room.open(Claim("b", 0.9, 10.0), window_s=0.25)
    assert election.verdicts == {}
    election.told("c", Verdict.ANSWER)  # c never claimed this one
    assert election.decide(10.0) is None
    election.told("a", Verdict.STAND_DOWN)
    assert election.decide(10.0) is Verdict.ANSWER


def test_a_peer_that_passed_below_our_claim_is_not_waited_for() -> None:
    room = Room("a")
    room.present("b", 0.0)
    room.present("c", 0.0)
    election = room.open(Claim("a", 0.6, 10.0), window_s=0.25)
    election.passed("b", 0.3)
    assert election.decide(10.005) is None  # c has neither claimed nor passed
    election.passed("c", 0.2)
    assert election.decide(10.006) is Verdict.ANSWER  # long before the window closes


def test_a_pass_above_our_claim_does_not_count() -> None:
    room = Room("a")
    room.present("b", 0.0)
    election = room.open(Claim("a", 0.3, 10.0), window_s=0.25)
    election.passed("b", 0.4)  # it passed on someone else's better claim, not on ours
    assert election.decide(10.01) is None
    assert election.decide(10.25) is Verdict.ANSWER  # as without the pass: the window closed


def test_a_pass_that_came_before_our_detection_counts() -> None:
    room = Room("c")
    room.present("a", 0.0)
    room.present("b", 0.0)
    room.heard(Claim("a", 0.5, 9.98), horizon_s=0.5)
    room.heard_pass("b", 0.2, 9.99, horizon_s=0.5)  # b passed on a's claim
    election = room.open(Claim("c", 0.7, 10.0), window_s=0.25)
    assert election.decide(10.0) is None  # a has not said it gave way to us yet
    election.told("a", Verdict.STAND_DOWN)
    assert election.decide(10.002) is Verdict.ANSWER


def test_a_device_that_passed_stands_down_on_its_own_detection_even_with_a_better_score() -> None:
    room = Room("b")
    room.present("a", 0.0)
    claim = Claim("a", 0.4, 10.0)
    room.heard(claim, horizon_s=0.5)
    assert room.should_pass(claim, bound=0.3)
    room.passed(10.0, horizon_s=0.5)
    # Its level rose past the bound by the time its own detector fired: it keeps its word.
    election = room.open(Claim("b", 0.9, 10.1), window_s=0.25)
    assert election.decide(10.1) is Verdict.STAND_DOWN
    # A later wake word (more than two windows on) is its own election again.
    later = room.open(Claim("b", 0.9, 11.0), window_s=0.25)
    assert later.decide(11.0) is None


def test_passes_only_below_the_claim() -> None:
    room = Room("b")
    claim = Claim("a", 0.4, 10.0)
    assert not room.should_pass(claim, bound=0.5)  # it could still win: it waits to claim
    assert not room.should_pass(claim, bound=0.4)  # a tie could go either way
    assert not room.should_pass(claim, bound=None)
    assert not room.should_pass(Claim("b", 0.4, 10.0), bound=0.1)  # its own claim echoed back
