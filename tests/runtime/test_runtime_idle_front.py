"""The front end's far-end flag on the idle path: the speaker's shared silent period is
recognised without scanning it, and sound in the reference is never missed."""

from __future__ import annotations

import numpy as np
from support.hearing_audio import noise

from edgevoice.audio.frames import DuplexFrame
from edgevoice.audio.speaking.playback import Speaker
from edgevoice.device.config.loader import build_config
from edgevoice.device.runtime.daemon import build_front_end


def test_far_end_flag_follows_the_reference_whether_shared_silence_or_sound() -> None:
    front = build_front_end(build_config([("test", {"asr": {"engine": "pocketsphinx"}})]))
    speaker = Speaker(160)
    room = noise(0.5, -62.0, seed=5)
    writable_zeros = np.zeros(160, np.int16)
    flags = []
    for index in range(40):
        mic = room[index * 160 : (index + 1) * 160]
        if index == 20:
            speaker.enqueue(np.full(160, 1000, np.int16), utterance_id="u")
        if index == 30:
            reference = writable_zeros
        elif index == 31:
            writable_zeros[5] = 3  # the same writable array, now with sound in it
            reference = writable_zeros
        else:
            reference = speaker.next_period()
            speaker.set_output_latency(0)
        flags.append(front.process(DuplexFrame(index, mic, reference), idle=True).far_end_active)
    front.close()
    assert flags[20] is True  # the queued period
    assert flags[31] is True
    assert not any(flags[:20]) and not any(flags[21:31]) and not any(flags[32:])
