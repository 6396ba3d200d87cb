"""The front end as the daemon builds it (real canceller, real Silero): idle economy."""

from __future__ import annotations

import numpy as np
from support.hearing_audio import frames, noise, piper_speech

from edgevoice.audio.frames import DuplexFrame, Pcm
from edgevoice.audio.hearing.endpoint import SpeechStarted
from edgevoice.device.config.loader import build_config
from edgevoice.device.runtime.daemon import build_front_end
from edgevoice.device.runtime.frontend import FrontEnd


def feed(front: FrontEnd, pcm: Pcm, *, idle: bool, start: int = 0) -> list[object]:
    silent = np.zeros(160, np.int16)
    events: list[object] = []
    whole = pcm[: len(pcm) // 160 * 160]  # the canceller takes whole 10 ms periods
    for index, mic in enumerate(frames(whole), start):
        events.extend(front.process(DuplexFrame(index, mic, silent), idle=idle).events)
    return events


def test_an_idle_front_end_skips_the_quiet_room_and_still_hears_speech() -> None:
    config = build_config([("test", {"asr": {"engine": "pocketsphinx"}})])
    front = build_front_end(config)
    vad = front.listener.vad
    room = noise(3.0, -62.0, seed=1)
    assert feed(front, room, idle=False) == []
    assert vad.skipped == 0  # in a conversation every window is scored
    assert feed(front, room, idle=True, start=300) == []
    assert vad.skipped > 80  # of 93 windows: the quiet room costs almost nothing
    speech = piper_speech("What time is it?")
    scene = np.concatenate([speech, noise(1.0, -62.0, seed=2)])
    scene[: len(speech)] += room[: len(speech)]
    events = feed(front, scene, idle=True, start=600)
    started = [e for e in events if isinstance(e, SpeechStarted)]
    assert len(started) == 1
    assert abs(started[0].start_s - 6.0) <= 0.15  # speech began at 6.0 s of the stream
    front.close()


def test_turns_carry_the_cancellers_linear_output() -> None:
    front = build_front_end(build_config([("test", {"asr": {"engine": "pocketsphinx"}})]))
    assert front.canceller is not None and front.canceller.name == "edgevoice"
    room = noise(0.5, -40.0, seed=4)
    silent = np.zeros(160, np.int16)
    windows = []
    for index, mic in enumerate(frames(room)):
        result = front.process(DuplexFrame(index, mic, silent))
        windows.extend(result.windows)
    assert windows and all(w.heard is not None for w in windows)
    # the far end is silent: the linear output is the microphone, one period late
    first = windows[1]
    start = first.start_sample - 160  # the canceller's output lags the mic by a period
    assert np.array_equal(first.turn_audio, room[start:start + 512])
    front.close()


def test_while_the_device_speaks_the_recognizer_waits_for_the_barge_in_decision() -> None:
    from edgevoice.audio.hearing.bargein import BargeInDetector, BargeInSettings
    from edgevoice.device.runtime.bargein import BargeInMonitor

    front = build_front_end(build_config([("test", {"asr": {"engine": "pocketsphinx"}})]))
    detector = BargeInDetector(BargeInSettings(min_words=0))
    front.barge_in = BargeInMonitor(detector)
    mic = noise(0.01, -40.0, seed=4)
    silent = np.zeros(160, np.int16)
    front.process(DuplexFrame(0, mic, silent), in_reply=True)
    assert front.listener.hold_recognition  # speech alone can decide: decode after it
    front.process(DuplexFrame(1, mic, silent), in_reply=False)
    assert not front.listener.hold_recognition  # nothing plays: decode as it comes
    detector.settings = BargeInSettings(min_words=1)
    front.process(DuplexFrame(2, mic, silent), in_reply=True)
    assert not front.listener.hold_recognition  # the decision needs recognised words
    detector.settings = BargeInSettings(min_words=0)
    detector.button()  # the barge-in happened: the person's turn is decoded at once
    front.process(DuplexFrame(3, mic, silent), in_reply=True)
    assert not front.listener.hold_recognition
    front.close()
