"""Barge-in against the room's own sound (``background_margin_db``): babble, a television or
a passing car is speech to the VAD, but only speech that stands out of the room interrupts
the device. The detector with its shipped settings, and the floor tracker on its own."""

from __future__ import annotations

import pytest

from edgevoice.audio.hearing.background import BackgroundLevel
from edgevoice.audio.hearing.bargein import BargeInDetector, BargeInInput, BargeInSettings, Decision

WINDOW_MS = 32  # Silero's window, as the daemon feeds the detector


def window(level: float, vad: float = 0.9, *, speaking: bool = True) -> BargeInInput:
    """One window of the echo-cancelled signal; the residual echo far under it."""
    return BargeInInput(duration_ms=WINDOW_MS, vad_probability=vad, speech_dbfs=level,
                        residual_echo_dbfs=-90.0, device_speaking=speaking)


def fired(det: BargeInDetector, levels: list[float], vad: float = 0.9) -> int | None:
    """The index of the window the detector interrupted on, if it did."""
    for i, level in enumerate(levels):
        if det.update(window(level, vad)).decision is Decision.BARGE_IN:
            return i
    return None


def listened(det: BargeInDetector, levels: list[float]) -> BargeInDetector:
    """The device silent in the room first, as it is before any reply."""
    for level in levels:
        det.update(window(level, speaking=False))
    return det


def babble(seconds: float, mean: float = -45.0) -> list[float]:
    """A room of other people: speech to the VAD, its level swinging +-5 dB about its mean."""
    swing = (0.0, 3.0, 5.0, 2.0, -1.0, -4.0, -5.0, -2.0)
    return [mean + swing[i % len(swing)] for i in range(int(seconds * 1000 / WINDOW_MS))]


def test_the_shipped_detector_does_not_take_a_room_of_other_people_for_a_person() -> None:
    det = listened(BargeInDetector(), babble(1.0))
    assert det.settings.background_margin_db > 0
    assert fired(det, babble(10.0)) is None
    # the same room with the test off: the babble interrupts the device within 200 ms
    det = listened(BargeInDetector(BargeInSettings(background_margin_db=0.0)), babble(1.0))
    hit = fired(det, babble(10.0))
    assert hit is not None and (hit + 1) * WINDOW_MS <= 200


def test_a_person_who_stands_out_of_the_babble_interrupts_at_the_usual_pace() -> None:
    det = listened(BargeInDetector(), babble(1.0))
    assert fired(det, babble(3.0)) is None
    # 15 dB over the babble's mean, with syllables dipping to the babble's own peaks
    person = [-30.0, -28.0, -33.0, -29.0, -40.0, -31.0, -27.0, -30.0, -29.0, -32.0]
    hit = fired(det, person)
    assert hit is not None and (hit + 1) * WINDOW_MS <= 200


def test_the_floor_is_the_room_before_the_speech_not_the_speech_itself() -> None:
    """Speech does not raise its own bar: it is judged against the room as it was at its
    onset. A run that starts 6 dB over a quiet room (speech to the VAD, not out of the
    room) and goes on for 1.3 s, longer than the floor tracker's 1 s span, then rises to
    14 dB over the room, interrupts; against a floor that followed the run it would not."""
    det = listened(BargeInDetector(), [-50.0] * 60)
    hit = fired(det, [-44.0] * 40 + [-36.0] * 10)
    assert hit is not None and hit >= 40


def test_speech_at_the_room_level_never_interrupts_but_a_quieter_room_lets_it() -> None:
    det = BargeInDetector()
    for _ in range(60):
        det.update(window(-40.0, vad=0.1))  # a loud room (a fan), not speech
    assert fired(det, [-33.0] * 100) is None  # 7 dB over it: under the 12 dB margin
    for _ in range(60):
        det.update(window(-50.0, vad=0.1))  # the fan off: the floor follows within 1 s
    assert fired(det, [-33.0] * 10) is not None


def test_the_test_asks_no_more_of_the_speech_than_min_speech_ms() -> None:
    """With min_speech_ms under background_loud_ms the speech needs to stand out only for
    as long as it needs to last (min_speech_ms 0: its first window)."""
    det = BargeInDetector(BargeInSettings(min_speech_ms=0))
    for _ in range(60):
        det.update(window(-60.0, vad=0.1))
    assert fired(det, [-30.0]) == 0


def test_the_floor_tracker() -> None:
    floor = BackgroundLevel(smooth_ms=100, span_ms=1000, blocks=4)
    floor.push(-50.0, 50)
    assert floor.dbfs is None  # not yet smooth_ms of it
    floor.push(-50.0, 50)
    assert floor.dbfs == pytest.approx(-50.0)
    for _ in range(5):
        floor.push(-20.0, 50)  # a loud moment: the floor stays the room's
    assert floor.dbfs is not None and floor.dbfs < -45.0
    for _ in range(40):  # 2 s louder: the whole span is the new room
        floor.push(-30.0, 50)
    assert floor.dbfs == pytest.approx(-30.0, abs=0.5)
    floor.reset()
    assert floor.dbfs is None
    with pytest.raises(ValueError):
        BackgroundLevel(span_ms=0)


def test_the_room_the_suppressor_hid_while_the_device_talked_is_not_a_person_when_it_pauses() -> None:
    """Tuning room r42: while the device talks, the residual-echo suppressor cuts the room's
    babble with the echo (-50 dBFS before it, -66 after); in a pause of the device's speech
    the babble comes back whole, 16 dB over a floor read through the suppressor. The floor
    reads each window no more than ``background_cut_db`` under its level before the
    suppressor, so the babble stands 10 dB over it, under the 12 dB margin. A person 14 dB
    over the room still interrupts."""

    def suppressed(vad: float = 0.1) -> BargeInInput:
        return BargeInInput(duration_ms=WINDOW_MS, vad_probability=vad, speech_dbfs=-66.0,
                            residual_echo_dbfs=-70.0, device_speaking=True, unsuppressed_dbfs=-50.0)

    def in_the_pause(level: float) -> BargeInInput:  # nothing playing: nothing suppressed
        return BargeInInput(duration_ms=WINDOW_MS, vad_probability=0.8, speech_dbfs=level,
                            residual_echo_dbfs=-120.0, device_speaking=True, unsuppressed_dbfs=level)

    def decisions(settings: BargeInSettings, level: float) -> list[Decision]:
        det = BargeInDetector(settings)
        for _ in range(60):  # 2 s of the device talking over the room
            det.update(suppressed())
        return [det.update(in_the_pause(level)).decision for _ in range(15)]

    shipped = BargeInSettings()
    assert shipped.background_cut_db == 10.0
    assert Decision.BARGE_IN not in decisions(shipped, -50.0)
    # the floor read through the suppressor (no cap on its cut): the babble interrupts
    assert Decision.BARGE_IN in decisions(BargeInSettings(background_cut_db=100.0), -50.0)
    assert Decision.BARGE_IN in decisions(shipped, -36.0)
