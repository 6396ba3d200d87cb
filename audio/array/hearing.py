"""The array in the live path: every mic and the reference in, one echo-cancelled mono
stream out, with the talker's direction.

Where the echo canceller runs (``placement``):

* ``per-mic`` — one canceller per mic, before the beam. The beam then never changes the
  echo path a canceller models, so steering toward a new talker in the middle of a reply
  (a barge-in) costs no echo. The cancellers' *linear* outputs (before residual-echo
  suppression, which is a different real gain per mic and would blur the phase the
  direction finder and MVDR read) steer the beam; their suppressed outputs go through the
  same weights, so the listener gets both streams as it does from one canceller. N times
  the canceller's CPU.
* ``after-beam`` — one canceller on the beam's output. To keep the path it models still,
  the beam holds (no steering, no noise learning) while the speaker plays; it steers
  again once the reply is over, and the canceller re-adapts to the new path when the next
  reply starts.

docs/array.md has both measured. The beam's output is ``overlap - 1`` hops late (30 ms
with the default STFT); with ``after-beam`` the reference is delayed by as much, so the
canceller sees the same bulk delay as without an array.

Not thread-safe: the front end's thread drives it, as it does a canceller.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Literal

import numpy as np

from edgevoice.audio.aec.base import AecStats, EchoCanceller
from edgevoice.audio.array.frontend import ArrayFrontEnd, ArraySettings, SegmentEstimate
from edgevoice.audio.array.geometry import ArrayGeometry
from edgevoice.audio.frames import MicPeriods, Pcm

Placement = Literal["per-mic", "after-beam"]
HOP = 160  # the array stage's hop: the cancellers' 10 ms period


def _int16(samples: np.ndarray) -> Pcm:
    out: Pcm = np.clip(np.rint(samples), -32768, 32767).astype(np.int16)
    return out


class ArrayHearing:
    """Beamforming toward the talker, with the echo cancelled per mic or after the beam."""

    def __init__(
        self,
        geometry: ArrayGeometry,
        settings: ArraySettings,
        cancellers: Sequence[EchoCanceller],
        placement: Placement = "per-mic",
    ) -> None:
        wanted = geometry.mic_count if placement == "per-mic" else 1
        if cancellers and len(cancellers) != wanted:
            raise ValueError(f"{placement} echo cancellation takes {wanted} canceller(s), "
                             f"not {len(cancellers)}")
        self.geometry = geometry
        self.placement: Placement = placement
        self.cancellers = list(cancellers)
        self.stage = ArrayFrontEnd(geometry, settings, hop=HOP)
        self.latency_periods = settings.overlap - 1
        self._held_references: deque[Pcm] = deque()
        self._held = False

    @property
    def stats(self) -> AecStats | None:
        """The canceller's figures (per mic: the first mic's, whose path is typical)."""
        return self.cancellers[0].stats if self.cancellers else None

    @property
    def steered_deg(self) -> float:
        return self.stage.steered_deg

    @property
    def smoothed_deg(self) -> float | None:
        """The talker's direction, smoothed over segments (telemetry)."""
        return self.stage.smoothed_deg

    def current_direction(self) -> SegmentEstimate | None:
        """The open speech segment's direction so far (None between segments)."""
        return self.stage.current_direction()

    @property
    def last_segment(self) -> SegmentEstimate | None:
        return self.stage.last_segment

    def reset_echo(self) -> None:
        """An xrun moved the echo path: every canceller estimates its delay afresh."""
        for canceller in self.cancellers:
            canceller.reset()

    def process(self, mics: MicPeriods, reference: Pcm, *, speech: bool,
                far_end: bool) -> tuple[Pcm, Pcm | None]:
        """One period of (samples, mics) and its reference → (clean, linear) mono int16,
        ``latency_periods`` late. ``speech``: the listener's VAD hears speech (as of the
        previous period); ``far_end``: the speaker is playing."""
        if len(mics) == HOP:
            return self._hop(mics, reference, speech, far_end)
        cleans: list[Pcm] = []
        linears: list[Pcm | None] = []
        for start in range(0, len(mics), HOP):
            clean, linear = self._hop(mics[start:start + HOP], reference[start:start + HOP], speech, far_end)
            cleans.append(clean)
            linears.append(linear)
        present = [x for x in linears if x is not None]
        joined: Pcm | None = np.concatenate(present) if len(present) == len(linears) else None
        return np.concatenate(cleans), joined

    def _hop(self, mics: MicPeriods, reference: Pcm, speech: bool, far_end: bool) -> tuple[Pcm, Pcm | None]:
        if self.placement == "per-mic":
            return self._per_mic(mics, reference, speech)
        return self._after_beam(mics, reference, speech, far_end)

    def _per_mic(self, mics: MicPeriods, reference: Pcm, speech: bool) -> tuple[Pcm, Pcm | None]:
        if not self.cancellers:
            return _int16(self.stage.process(mics, speech)), None
        count = self.geometry.mic_count
        clean = np.empty((HOP, count), dtype=np.float64)
        linear = np.empty((HOP, count), dtype=np.float64)
        has_linear = True
        for m, canceller in enumerate(self.cancellers):
            channel = mics[:, m]
            if channel.dtype != np.int16:
                channel = _int16(channel)
            clean[:, m] = canceller.process(np.ascontiguousarray(channel), reference)
            lin = canceller.linear
            if lin is None:
                has_linear = False
            else:
                linear[:, m] = lin
        if not has_linear:
            return _int16(self.stage.process(clean, speech)), None
        beam_linear, beam_clean = self.stage.process_pair(linear, clean, speech)
        return _int16(beam_clean), _int16(beam_linear)

    def _after_beam(self, mics: MicPeriods, reference: Pcm, speech: bool,
                    far_end: bool) -> tuple[Pcm, Pcm | None]:
        # hold the beam while the speaker plays: the canceller models the path through it
        self._hold(far_end)
        beam = _int16(self.stage.process(mics, speech))
        # the beam is latency_periods late: give the canceller the reference as late
        self._held_references.append(reference)
        if len(self._held_references) <= self.latency_periods:
            delayed = np.zeros(HOP, dtype=np.int16)
        else:
            delayed = self._held_references.popleft()
        if not self.cancellers:
            return beam, None
        canceller = self.cancellers[0]
        return canceller.process(beam, delayed), canceller.linear

    def _hold(self, far_end: bool) -> None:
        if far_end != self._held:
            self._held = far_end
            self.stage.hold(far_end)

    def close(self) -> None:
        for canceller in self.cancellers:
            canceller.close()
