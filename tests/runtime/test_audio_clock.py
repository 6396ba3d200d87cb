from __future__ import annotations

import pytest

from edgevoice.device.runtime.tasks import AudioClock


def test_past_stamps_map_through_a_stall_of_the_audio_thread() -> None:
    wall = [0.0]
    audio = [0.0]
    clock = AudioClock(lambda: audio[0], monotonic=lambda: wall[0])
    for _ in range(100):  # 1 s at real time
        wall[0] += 0.01
        audio[0] += 0.01
        clock.tick()
    wall[0] += 0.5  # the audio thread stalls for half a second...
    clock.tick()
    for _ in range(50):  # ...then runs on at real time
        wall[0] += 0.01
        audio[0] += 0.01
        clock.tick()
    assert clock.at(0.505) == pytest.approx(0.505)
    # A stamp inside the stall is no later on the audio clock than where audio resumed.
    assert clock.at(1.3) == pytest.approx(1.0)
    assert clock.at(1.6) == pytest.approx(1.1)
    assert clock.now() == pytest.approx(1.5)
    # Before the first tick: assume real time backwards from now.
    assert AudioClock(lambda: 5.0, monotonic=lambda: 10.0).at(9.0) == pytest.approx(4.0)
