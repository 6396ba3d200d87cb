"""Earcons: short tones that say what the device is doing, synthesised with numpy.

Each is deterministic 16 kHz int16 PCM built from a few sine notes with raised-
cosine edges (no clicks): wake (rising two-note chirp), listening (one high
blip), thinking (two soft low ticks), error (falling two notes), reset (three
falling notes). Each can be switched off; a switched-off earcon is simply not
queued.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from functools import lru_cache

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm, to_int16
from edgevoice.audio.speaking.playback import Speaker


class Earcon(StrEnum):
    WAKE = "wake"
    LISTENING = "listening"
    THINKING = "thinking"
    ERROR = "error"
    RESET = "reset"
    ANNOUNCE = "announce"  # before an announcement from outside (MQTT announce)
    TIMER = "timer"  # a timer ringing (repeated until stopped)


# (frequency Hz, duration ms, gap after ms) per note
_NOTES: dict[Earcon, tuple[tuple[float, int, int], ...]] = {
    Earcon.WAKE: ((660.0, 70, 10), (990.0, 90, 0)),
    Earcon.LISTENING: ((880.0, 60, 0),),
    Earcon.THINKING: ((440.0, 35, 90), (440.0, 35, 0)),
    Earcon.ERROR: ((494.0, 120, 20), (330.0, 200, 0)),
    Earcon.RESET: ((784.0, 70, 15), (659.0, 70, 15), (523.0, 110, 0)),
    Earcon.ANNOUNCE: ((523.0, 100, 20), (659.0, 100, 20), (784.0, 160, 0)),
    Earcon.TIMER: ((1047.0, 100, 50), (1047.0, 100, 50), (1047.0, 100, 0)),
}


def _note(frequency: float, duration_ms: int, level: float) -> np.ndarray[tuple[int], np.dtype[np.float64]]:
    n = SAMPLE_RATE * duration_ms // 1000
    t = np.arange(n) / SAMPLE_RATE
    # A touch of the second harmonic makes it audible on small speakers.
    tone = np.sin(2 * np.pi * frequency * t) + 0.25 * np.sin(4 * np.pi * frequency * t)
    edge = min(n // 2, SAMPLE_RATE * 8 // 1000)  # 8 ms fades
    envelope = np.ones(n)
    ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, edge))
    envelope[:edge] = ramp
    envelope[n - edge :] = ramp[::-1]
    out: np.ndarray[tuple[int], np.dtype[np.float64]] = tone * envelope * (level / 1.25)
    return out


@lru_cache(maxsize=32)
def _render(kind: Earcon, level: float) -> bytes:
    parts = []
    for frequency, duration_ms, gap_ms in _NOTES[kind]:
        parts.append(_note(frequency, duration_ms, level))
        parts.append(np.zeros(SAMPLE_RATE * gap_ms // 1000))
    return to_int16(np.concatenate(parts)).tobytes()


def earcon_pcm(kind: Earcon | str, level: float = 0.3) -> Pcm:
    """The earcon as 16 kHz int16 PCM; ``level`` is its peak (0..1 of full scale)."""
    level = min(1.0, max(0.0, float(level)))
    return np.frombuffer(_render(Earcon(kind), round(level, 4)), dtype=np.int16).copy()


class Earcons:
    """Plays enabled earcons through a :class:`Speaker`."""

    def __init__(self, speaker: Speaker, enabled: Iterable[Earcon | str] = tuple(Earcon),
                 level: float = 0.3) -> None:
        self.speaker = speaker
        self.enabled = frozenset(Earcon(kind) for kind in enabled)
        self.level = level

    def play(self, kind: Earcon | str) -> bool:
        """Queue ``kind`` if it is enabled; True when queued."""
        earcon = Earcon(kind)
        if earcon not in self.enabled:
            return False
        self.speaker.enqueue(
            earcon_pcm(earcon, self.level), utterance_id=f"earcon:{earcon}", text="", kind="earcon"
        )
        return True
