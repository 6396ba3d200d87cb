from __future__ import annotations

import time

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


@pytest.mark.parametrize("speed", [1.0, 4.0])
async def test_sleeping_until_an_audio_time_follows_the_audio_clock_not_the_wall_clock(speed: float) -> None:
    # speculation waits for its request's moment on the audio clock: a simulation running at
    # 4x reaches it in a quarter of the wall time
    started = time.monotonic()
    clock = AudioClock(lambda: 100.0 + speed * (time.monotonic() - started))
    await clock.sleep_until(clock.now() + 0.4)
    waited = time.monotonic() - started
    assert 0.4 / speed - 0.01 <= waited <= 0.4 / speed + 0.06, waited
