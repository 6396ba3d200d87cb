"""The echo-canceller interface every engine implements.

Usage (one call per 10 ms period at 16 kHz, on the duplex loop's thread)::

    from edgevoice.audio.aec import create_canceller
    aec = create_canceller("edgevoice")          # or "speex", "webrtc", "none"
    clean = aec.process(frame.mic, frame.reference)   # int16 in, int16 out, same length
    aec.stats.reference_ok     # False: no usable reference -> barge-in safe mode
    aec.stats.residual_echo_dbfs   # feed the barge-in detector's threshold

``reference`` is what the speaker was sent in the same period (or a hardware loopback
channel). The bulk delay between the two is estimated by the engine, never configured.
Engines are not thread-safe: one canceller per stream, driven by one thread.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from edgevoice.audio.errors import AudioError
from edgevoice.audio.frames import SAMPLE_RATE, Pcm

PERIOD_SAMPLES = 160
"""Every engine processes 10 ms periods at 16 kHz."""


class AecError(AudioError):
    """An echo canceller could not be created or was fed the wrong shape of audio."""

    code = "aec_error"


@dataclass(frozen=True, slots=True)
class AecStats:
    """What the runtime and the self-test read from an engine after each period.

    ``delay_ms``: the estimated bulk delay from reference to microphone (None: not
    known yet or not reported by the engine). ``erle_db``: echo return loss enhancement,
    smoothed over recent periods where the far end was active (None: not measured yet).
    ``converged``: the canceller has locked onto the echo path. ``reference_ok``: the
    reference carries signal that explains the microphone's echo; False means barge-in
    must fall back to its safe mode (no reference, a muted or wrong reference channel,
    or the engine is ``none``). ``residual_echo_dbfs``: the level of echo left in the
    output, the floor a barge-in must rise above. ``far_end_active``: the reference
    carried sound in the last period. ``echo_absent``: the microphone does not hear the
    loudspeaker at all (no echo, so nothing for the reference to prove; engines that
    cannot tell leave it False).
    """

    engine: str
    delay_ms: float | None = None
    erle_db: float | None = None
    converged: bool = False
    reference_ok: bool = False
    residual_echo_dbfs: float = -120.0
    far_end_active: bool = False
    periods: int = 0
    echo_absent: bool = False


class EchoCanceller(abc.ABC):
    """Removes the speaker's sound (``reference``) from the microphone signal."""

    name: str = "base"
    latency_ms: float = 0.0
    """Delay the engine adds to the near-end signal (0 for frame-synchronous engines)."""

    @abc.abstractmethod
    def process(self, mic: Pcm, reference: Pcm) -> Pcm:
        """Cancel the echo in one 10 ms period (160 samples of each) and return 160 samples."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget the echo path (device moved, stream restarted)."""

    @property
    @abc.abstractmethod
    def stats(self) -> AecStats:
        """The engine's current view of the echo path."""

    @property
    def linear(self) -> Pcm | None:
        """The last period before residual-echo suppression, aligned with what
        :meth:`process` returned (same latency); None for engines without such a stage.
        A recognizer hears a talker's first word in it that the suppressor, still
        holding the echo down in double talk, takes away."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook, most engines hold nothing
        """Release native resources."""

    def process_signal(self, mic: Pcm, reference: Pcm) -> Pcm:
        """Run whole recordings through the engine period by period (offline use).

        Both are cut to the shorter length rounded down to whole periods."""
        n = min(len(mic), len(reference)) // PERIOD_SAMPLES * PERIOD_SAMPLES
        out = mic[:n].copy()
        for start in range(0, n, PERIOD_SAMPLES):
            end = start + PERIOD_SAMPLES
            out[start:end] = self.process(mic[start:end], reference[start:end])
        return out


def check_period(mic: Pcm, reference: Pcm) -> None:
    if len(mic) != PERIOD_SAMPLES or len(reference) != PERIOD_SAMPLES:
        raise AecError(
            f"echo cancellers take {PERIOD_SAMPLES}-sample periods (10 ms at {SAMPLE_RATE} Hz); "
            f"got mic={len(mic)} reference={len(reference)}"
        )
