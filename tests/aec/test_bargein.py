"""The barge-in detector: every rule, mode and transition, without clocks or audio."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgevoice.audio.hearing.bargein import (
    After,
    BargeInDetector,
    BargeInInput,
    BargeInSettings,
    BargeInUpdate,
    Decision,
    Mode,
    SafeMode,
)

RESIDUAL = -60.0


def rules(**changes: object) -> BargeInSettings:
    """The settings for the tests of every rule but the room's background (those below
    give each period one level, the device's echo and a person alike, so no speech
    would stand over the room)."""
    return BargeInSettings(**{"background_margin_db": 0.0, **changes})  # type: ignore[arg-type]


def period(vad: float = 0.0, level: float = -30.0, *, speaking: bool = True, ref_ok: bool = True,
           residual: float = RESIDUAL, ms: int = 10, unsuppressed: float | None = None,
           heard: bool = True, no_echo: bool = False) -> BargeInInput:
    return BargeInInput(duration_ms=ms, vad_probability=vad, speech_dbfs=level,
                        residual_echo_dbfs=residual, device_speaking=speaking, reference_ok=ref_ok,
                        unsuppressed_dbfs=unsuppressed, reference_heard=heard, echo_absent=no_echo)


def feed(det: BargeInDetector, p: BargeInInput, count: int) -> list[BargeInUpdate]:
    return [det.update(p) for _ in range(count)]


def first(updates: list[BargeInUpdate], decision: Decision) -> int | None:
    for i, u in enumerate(updates):
        if u.decision is decision:
            return i
    return None


def test_sustained_speech_interrupts_after_min_speech_ms() -> None:
    det = BargeInDetector(rules(min_speech_ms=200))
    feed(det, period(), 5)  # 50 ms of the device talking alone
    ups = feed(det, period(vad=0.9), 25)
    assert first(ups, Decision.BARGE_IN) == 19  # the 20th 10 ms period reaches 200 ms
    hit = ups[19]
    assert hit.speech_ms == 200 and hit.speech_onset_ms == 50 and hit.mode is Mode.NORMAL
    assert det.interrupted
    # nothing more until the turn is finished
    assert all(u.decision is Decision.NONE for u in ups[20:])


def test_short_speech_does_not_interrupt() -> None:
    det = BargeInDetector(rules(min_speech_ms=200, hangover_ms=60))
    for _ in range(5):
        ups = feed(det, period(vad=0.9), 15) + feed(det, period(), 10)
        assert first(ups, Decision.BARGE_IN) is None


def test_gaps_within_the_hangover_do_not_break_speech() -> None:
    det = BargeInDetector(rules(min_speech_ms=200, hangover_ms=60))
    ups = []
    for _ in range(4):
        ups += feed(det, period(vad=0.9), 5) + feed(det, period(), 5)
    ups += feed(det, period(vad=0.9), 5)
    hit = first(ups, Decision.BARGE_IN)
    assert hit is not None and ups[hit].speech_onset_ms == 0


def test_a_gap_longer_than_the_hangover_restarts_the_count() -> None:
    det = BargeInDetector(rules(min_speech_ms=200, hangover_ms=60))
    ups = feed(det, period(vad=0.9), 15) + feed(det, period(), 7) + feed(det, period(vad=0.9), 19)
    assert first(ups, Decision.BARGE_IN) is None
    ups = feed(det, period(vad=0.9), 1)
    assert ups[0].decision is Decision.BARGE_IN and ups[0].speech_onset_ms == 220


def test_speech_must_rise_above_the_residual_echo() -> None:
    det = BargeInDetector(rules(min_speech_ms=100, margin_db=6.0))
    # VAD fires on echo leaking through at the residual level: not a person
    ups = feed(det, period(vad=0.95, level=-40.0, residual=-44.0), 50)
    assert first(ups, Decision.BARGE_IN) is None
    ups = feed(det, period(vad=0.95, level=-37.0, residual=-44.0), 10)
    assert first(ups, Decision.BARGE_IN) == 9


def test_speech_the_suppressor_cut_hard_is_echo() -> None:
    """A clipping loudspeaker: echo the linear filter cannot model sits far above the
    residual-echo estimate, and the suppressor cuts it by more than max_suppression_db."""
    det = BargeInDetector(rules(min_speech_ms=100, max_suppression_db=6.0))
    ups = feed(det, period(vad=0.95, level=-41.0, unsuppressed=-34.0), 50)  # 7 dB taken
    assert first(ups, Decision.BARGE_IN) is None
    # a person comes through the suppressor nearly whole
    ups = feed(det, period(vad=0.95, level=-40.0, unsuppressed=-34.0), 10)  # 6 dB: still speech
    assert first(ups, Decision.BARGE_IN) == 9


def test_with_no_echo_at_all_the_suppressors_cut_is_not_echo() -> None:
    """A handset or a remote loudspeaker: the canceller reads a room's noise as a residual
    and its suppressor takes the person down with it; with the microphone hearing no
    loudspeaker (echo_absent), that cut is no sign of echo."""
    det = BargeInDetector(rules(min_speech_ms=100, max_suppression_db=6.0))
    ups = feed(det, period(vad=0.95, level=-46.0, unsuppressed=-34.0, no_echo=True), 10)  # 12 dB taken
    assert first(ups, Decision.BARGE_IN) == 9


@pytest.mark.parametrize("unsuppressed", [None, -10.0])
def test_the_suppression_test_is_off_at_zero_or_without_a_level_before_the_suppressor(
        unsuppressed: float | None) -> None:
    limit = 0.0 if unsuppressed is not None else 6.0
    det = BargeInDetector(rules(min_speech_ms=100, max_suppression_db=limit))
    ups = feed(det, period(vad=0.95, level=-40.0, unsuppressed=unsuppressed), 10)
    assert first(ups, Decision.BARGE_IN) == 9


def test_vad_threshold_is_inclusive_and_below_is_silence() -> None:
    det = BargeInDetector(rules(min_speech_ms=50, vad_threshold=0.6))
    assert first(feed(det, period(vad=0.59), 20), Decision.BARGE_IN) is None
    assert first(feed(det, period(vad=0.6), 5), Decision.BARGE_IN) == 4


def test_nothing_happens_while_the_device_is_silent() -> None:
    det = BargeInDetector(rules(min_speech_ms=50))
    ups = feed(det, period(vad=1.0, speaking=False), 100)
    assert all(u.decision is Decision.NONE for u in ups)
    # speech that started while silent does not count once the device starts talking
    ups = feed(det, period(vad=1.0), 5)
    assert ups[-1].decision is Decision.BARGE_IN and ups[-1].speech_onset_ms == 1000


def test_min_words_holds_a_candidate_until_words_arrive() -> None:
    det = BargeInDetector(rules(min_speech_ms=200, min_words=2))
    ups = feed(det, period(vad=0.9), 20)
    assert ups[-1].decision is Decision.CANDIDATE and not det.interrupted
    assert det.words(1).decision is Decision.CANDIDATE
    hit = det.words(2)
    assert hit.decision is Decision.BARGE_IN and hit.words == 2 and hit.speech_onset_ms == 0
    assert det.interrupted


def test_words_before_the_speech_is_long_enough_count_when_it_is() -> None:
    det = BargeInDetector(rules(min_speech_ms=200, min_words=1))
    feed(det, period(vad=0.9), 10)
    assert det.words(1).decision is Decision.NONE
    ups = feed(det, period(vad=0.9), 10)
    assert ups[-1].decision is Decision.BARGE_IN


def test_a_backchannel_without_words_is_ignored() -> None:
    det = BargeInDetector(rules(min_speech_ms=200, min_words=1, release_ms=300))
    ups = feed(det, period(vad=0.9), 30) + feed(det, period(), 31)
    assert first(ups, Decision.BARGE_IN) is None
    assert ups[-1].decision is Decision.BACKCHANNEL
    assert not det.interrupted
    # and the next real interruption works from scratch
    ups = feed(det, period(vad=0.9), 20)
    assert ups[-1].decision is Decision.CANDIDATE and ups[-1].speech_onset_ms == 610
    assert det.words(3).decision is Decision.BARGE_IN


def test_words_after_the_candidate_was_dropped_do_nothing() -> None:
    det = BargeInDetector(rules(min_speech_ms=100, min_words=1, release_ms=100))
    feed(det, period(vad=0.9), 10)
    feed(det, period(), 11)
    assert det.words(1).decision is Decision.NONE
    assert not det.interrupted


def test_button_interrupts_in_every_mode() -> None:
    for s, ref_ok in itertools.product(
        [rules(), rules(safe_mode=SafeMode.BUTTON_ONLY), rules(enabled=False)],
        [True, False],
    ):
        det = BargeInDetector(s)
        feed(det, period(ref_ok=ref_ok), 3)
        hit = det.button()
        assert hit.decision is Decision.BARGE_IN and hit.speech_onset_ms == 30
        assert det.interrupted


def test_disabled_never_interrupts_on_speech() -> None:
    det = BargeInDetector(rules(enabled=False))
    ups = feed(det, period(vad=1.0, level=0.0), 300)
    assert {u.decision for u in ups} == {Decision.NONE}
    assert {u.mode for u in ups} == {Mode.DISABLED}
    assert not any(u.mode_changed for u in ups)


def test_safe_threshold_mode_without_a_working_reference() -> None:
    s = rules(min_speech_ms=200, safe_min_speech_ms=400, safe_vad_threshold=0.85,
                        safe_margin_db=12.0)
    det = BargeInDetector(s)
    ups = feed(det, period(vad=0.7, ref_ok=False), 100)
    assert ups[0].mode is Mode.SAFE_THRESHOLD and ups[0].mode_changed
    assert not any(u.mode_changed for u in ups[1:])
    assert first(ups, Decision.BARGE_IN) is None  # 0.7 is below the safe threshold
    ups = feed(det, period(vad=0.9, level=-50.0, residual=-60.0, ref_ok=False), 100)
    assert first(ups, Decision.BARGE_IN) is None  # only 10 dB above the echo: not enough
    ups = feed(det, period(vad=0.9, level=-40.0, residual=-60.0, ref_ok=False), 50)
    assert first(ups, Decision.BARGE_IN) == 39  # 400 ms in safe mode


def test_button_only_safe_mode_ignores_speech() -> None:
    det = BargeInDetector(rules(safe_mode=SafeMode.BUTTON_ONLY))
    ups = feed(det, period(vad=1.0, level=0.0, ref_ok=False), 200)
    assert ups[0].mode is Mode.BUTTON_ONLY and ups[0].mode_changed
    assert first(ups, Decision.BARGE_IN) is None
    assert det.button().decision is Decision.BARGE_IN


def test_the_normal_mode_returns_only_after_the_reference_is_good_for_recover_ms() -> None:
    det = BargeInDetector(rules(recover_ms=500))
    assert feed(det, period(ref_ok=False), 1)[0].mode_changed
    ups = feed(det, period(ref_ok=True), 60)
    back = [i for i, u in enumerate(ups) if u.mode_changed]
    assert back == [49] and ups[49].mode is Mode.NORMAL
    # a glitch in between restarts the wait
    det = BargeInDetector(rules(recover_ms=500))
    feed(det, period(ref_ok=False), 1)
    feed(det, period(ref_ok=True), 30)
    feed(det, period(ref_ok=False), 1)
    ups = feed(det, period(ref_ok=True), 49)
    assert all(u.mode is Mode.SAFE_THRESHOLD for u in ups)
    assert det.update(period(ref_ok=True)).mode is Mode.NORMAL


def proven(settings: BargeInSettings) -> BargeInDetector:
    """A detector whose reference proved itself: safe at first, normal after recover_ms."""
    det = BargeInDetector(settings)
    feed(det, period(ref_ok=False), 1)
    ups = feed(det, period(ref_ok=True), settings.recover_ms // 10)
    assert ups[-1].mode is Mode.NORMAL
    return det


def test_a_proven_reference_is_trusted_through_a_short_dip_in_its_reading() -> None:
    """Double talk pulls the canceller's reading down right when the barge-in is decided:
    the person is heard with the normal thresholds, not the safe mode's."""
    s = rules(min_speech_ms=150, recover_ms=500, degrade_ms=2000)
    det = proven(s)
    ups = feed(det, period(vad=0.6, level=-40.0, ref_ok=False), 30)
    assert all(u.mode is Mode.NORMAL and not u.mode_changed for u in ups)
    assert first(ups, Decision.BARGE_IN) == 14  # 150 ms at the normal threshold
    # after the barge-in the reading recovers: still normal, nothing reported
    det.turn_finished(3)
    assert not any(u.mode_changed for u in feed(det, period(ref_ok=True), 10))


def test_a_reference_bad_for_degrade_ms_ends_in_the_safe_mode() -> None:
    s = rules(recover_ms=500, degrade_ms=2000)
    det = proven(s)
    ups = feed(det, period(ref_ok=False), 250)
    changed = [i for i, u in enumerate(ups) if u.mode_changed]
    assert changed == [199] and ups[199].mode is Mode.SAFE_THRESHOLD  # at 2000 ms
    # once safe, the reference must prove itself again (recover_ms of good readings)
    assert feed(det, period(ref_ok=True), 49)[-1].mode is Mode.SAFE_THRESHOLD
    assert det.update(period(ref_ok=False)).mode is Mode.SAFE_THRESHOLD
    assert feed(det, period(ref_ok=True), 50)[-1].mode is Mode.NORMAL
    assert det.update(period(ref_ok=False)).mode is Mode.NORMAL  # proven again: trusted
    # and a good reading between bad ones restarts the count
    det = proven(s)
    feed(det, period(ref_ok=False), 150)
    feed(det, period(ref_ok=True), 1)
    assert all(u.mode is Mode.NORMAL for u in feed(det, period(ref_ok=False), 199))
    assert det.update(period(ref_ok=False)).mode is Mode.SAFE_THRESHOLD


def test_a_reference_that_never_proved_itself_is_not_trusted() -> None:
    """At start the mode is normal, but the first bad reading (the first reply, the
    canceller not yet converged) switches to the safe mode at once."""
    det = BargeInDetector(rules(degrade_ms=2000))
    feed(det, period(ref_ok=True, speaking=False), 100)
    up = det.update(period(ref_ok=False))
    assert up.mode_changed and up.mode is Mode.SAFE_THRESHOLD


def test_silence_neither_proves_nor_fails_the_reference() -> None:
    """The wake chime played before the canceller converged (safe mode); the quiet that
    follows must not bring back the normal mode: the first reply's unconverged echo,
    speech-like for 150 ms, interrupted the device when it did (seen with HA's replies)."""
    s = rules(min_speech_ms=150, recover_ms=1000, degrade_ms=2000)
    det = BargeInDetector(s)
    assert det.update(period(ref_ok=False, speaking=False)).mode is Mode.SAFE_THRESHOLD
    # 3 s of quiet, as the monitor reads it (nothing played: the reading is "ok")
    ups = feed(det, period(ref_ok=True, speaking=False, heard=False), 300)
    assert all(u.mode is Mode.SAFE_THRESHOLD and not u.mode_changed for u in ups)
    echo = feed(det, period(vad=0.6, level=-40.0, ref_ok=False), 100)  # the first reply
    assert first(echo, Decision.BARGE_IN) is None
    # the reference proves itself while the device plays, and only then
    ups = feed(det, period(ref_ok=True), 100)
    assert [i for i, u in enumerate(ups) if u.mode_changed] == [99] and ups[99].mode is Mode.NORMAL
    # a proven reference stays trusted through quiet as well
    assert all(u.mode is Mode.NORMAL for u in feed(det, period(ref_ok=False, heard=False), 500))


def test_a_microphone_that_hears_no_loudspeaker_leaves_the_safe_mode() -> None:
    """A handset or a remote loudspeaker: no echo, so the canceller proves nothing, and the
    safe mode would miss people for good. Echo-free readings bring the normal mode after
    recover_ms; the person talking over the device, who breaks them first, is judged there
    (degrade_ms's grace); echo that stays unremoved longer is the safe mode again."""
    s = rules(min_speech_ms=150, recover_ms=1000, degrade_ms=2000)
    det = BargeInDetector(s)
    assert det.update(period(ref_ok=False)).mode is Mode.SAFE_THRESHOLD
    ups = feed(det, period(ref_ok=False, no_echo=True), 100)
    assert [i for i, u in enumerate(ups) if u.mode_changed] == [99] and ups[99].mode is Mode.NORMAL
    # the person's voice ends the echo-free reading: taken at the normal threshold
    talk = feed(det, period(vad=0.6, level=-40.0, ref_ok=False), 30)
    assert all(u.mode is Mode.NORMAL for u in talk)
    assert first(talk, Decision.BARGE_IN) == 14
    det.turn_finished(3)
    # the loudspeaker switched on, its echo not removed for degrade_ms: safe again
    ups = feed(det, period(ref_ok=False), 200)
    assert [i for i, u in enumerate(ups) if u.mode_changed] == [169]  # 2000 ms of bad readings
    assert ups[-1].mode is Mode.SAFE_THRESHOLD
    # echo-free readings shorter than recover_ms do not do it
    det = BargeInDetector(s)
    det.update(period(ref_ok=False))
    feed(det, period(ref_ok=False, no_echo=True), 99)
    det.update(period(ref_ok=False))
    assert all(u.mode is Mode.SAFE_THRESHOLD for u in feed(det, period(ref_ok=False, no_echo=True), 99))


def test_mode_changes_are_reported_even_when_the_device_is_silent() -> None:
    det = BargeInDetector(rules())
    up = det.update(period(speaking=False, ref_ok=False))
    assert up.mode_changed and up.mode is Mode.SAFE_THRESHOLD


def test_false_barge_in_resumes_or_drops_by_setting() -> None:
    for resume, expected in ((True, After.RESUME), (False, After.DROP)):
        det = BargeInDetector(rules(min_speech_ms=50, resume_after_false_barge_in=resume))
        feed(det, period(vad=0.9), 5)
        assert det.interrupted
        assert det.turn_finished(words=0) is expected
        assert not det.interrupted


def test_words_after_a_barge_in_make_a_new_turn_and_the_detector_rearms() -> None:
    det = BargeInDetector(rules(min_speech_ms=50))
    feed(det, period(vad=0.9), 5)
    assert det.turn_finished(words=4) is After.NEW_TURN
    ups = feed(det, period(vad=0.9), 5)
    assert ups[-1].decision is Decision.BARGE_IN and ups[-1].speech_onset_ms == 50


def test_reset_forgets_speech_in_progress() -> None:
    det = BargeInDetector(rules(min_speech_ms=100))
    feed(det, period(vad=0.9), 9)
    det.reset()
    assert feed(det, period(vad=0.9), 9)[-1].decision is Decision.NONE
    assert det.now_ms == 180


def test_zero_min_speech_interrupts_on_the_first_speech_period() -> None:
    det = BargeInDetector(rules(min_speech_ms=0))
    assert det.update(period(vad=0.9)).decision is Decision.BARGE_IN


@pytest.mark.parametrize("kwargs", [{"min_speech_ms": -1}, {"min_words": -1}, {"vad_threshold": 1.5},
                                    {"safe_vad_threshold": -0.1}])
def test_invalid_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BargeInSettings(**kwargs)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(-90, 0), st.booleans(), st.booleans()), max_size=200),
    st.integers(0, 400),
    st.integers(0, 2),
)
def test_never_interrupts_without_enough_qualifying_speech(
    periods: list[tuple[float, float, bool, bool]], min_speech_ms: int, min_words: int
) -> None:
    """Property: a BARGE_IN from speech always follows at least min_speech_ms (normal) or
    safe_min_speech_ms (safe) of qualifying speech within the hangover, device speaking,
    and with min_words words; and onsets are never in the future."""
    s = rules(min_speech_ms=min_speech_ms, min_words=min_words)
    det = BargeInDetector(s)
    for vad, level, speaking, ref_ok in periods:
        up = det.update(period(vad=vad, level=level, speaking=speaking, ref_ok=ref_ok))
        if up.speech_onset_ms is not None:
            assert up.speech_onset_ms < det.now_ms
        if up.decision is Decision.BARGE_IN:
            assert speaking
            needed = min_speech_ms if up.mode is Mode.NORMAL else s.safe_min_speech_ms
            assert up.speech_ms >= needed
            assert min_words == 0
            assert up.mode in (Mode.NORMAL, Mode.SAFE_THRESHOLD)
            det.turn_finished(words=1)
