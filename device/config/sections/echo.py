"""Echo cancellation and barge-in."""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.config.fields import setting


@dataclass(frozen=True, slots=True)
class AecConfig:
    """Echo cancellation of the speaker's sound in the microphone (docs/aec.md)."""

    engine: str = setting(
        "edgevoice",
        "Echo canceller: edgevoice (built in, numpy), speex (libspeexdsp), webrtc (WebRTC AEC3, "
        "needs edgevoice[aec-reference]) or none (barge-in then runs in its safe mode).",
        choices=("edgevoice", "speex", "webrtc", "none"),
        restart=True,
    )
    filter_ms: int = setting(
        250, "Length of the adaptive echo-path filter after the bulk delay (edgevoice; speex "
        "spans max(filter_ms, max_delay_ms) because it has no delay estimator).",
        minimum=40, maximum=1000, restart=True,
    )
    max_delay_ms: int = setting(
        500, "Longest bulk delay between the reference and the mic the estimator searches.",
        minimum=50, maximum=1000, restart=True,
    )
    suppression_db: float = setting(
        -40.0, "Deepest attenuation of the residual echo suppressor (edgevoice).",
        minimum=-80.0, maximum=0.0, restart=True,
    )


@dataclass(frozen=True, slots=True)
class BargeInConfig:
    """Talking over the device while it speaks (docs/aec.md)."""

    enabled: bool = setting(True, "Let speech interrupt the device's reply.")
    min_speech_ms: int = setting(
        150, "Speech must last this long above the residual echo to interrupt.",
        minimum=0, maximum=5000,
    )
    min_words: int = setting(
        0, "Also require this many recognised words (1-2 keeps 'mm-hm' from interrupting). "
        "0: speech alone interrupts.", minimum=0, maximum=10,
    )
    vad_threshold: float = setting(
        0.5, "VAD probability that counts as speech on the echo-cancelled signal.",
        minimum=0.0, maximum=1.0,
    )
    margin_db: float = setting(
        6.0, "How far above the canceller's residual-echo level speech must be.",
        minimum=0.0, maximum=40.0,
    )
    safe_mode: str = setting(
        "threshold",
        "Without a working echo reference: threshold (stricter VAD and longer speech) or "
        "button_only (only the button interrupts).",
        choices=("threshold", "button_only"),
    )
    safe_vad_threshold: float = setting(
        0.85, "VAD threshold in the threshold safe mode.", minimum=0.0, maximum=1.0
    )
    safe_min_speech_ms: int = setting(
        400, "Sustained speech needed in the threshold safe mode.", minimum=0, maximum=5000
    )
    vad_signal: str = setting(
        "output", "What the barge-in VAD scores while the device speaks: output (the echo "
        "canceller's output) or linear (its output before residual-echo suppression: "
        "interruptions are taken ~3x sooner, but a loudspeaker that clips leaves residual "
        "echo there that interrupts the device; only for a clean, linear speaker, see "
        "docs/aec.md).", choices=("output", "linear"), restart=True,
    )
    degrade_ms: int = setting(
        2000, "Once the echo reference has proven itself, trust it through a bad reading "
        "shorter than this: a person talking over the device pulls the canceller's "
        "echo-reduction reading down for a moment. A longer failure switches to the safe mode.",
        minimum=0, maximum=60000,
    )
    max_suppression_db: float = setting(
        6.0, "Speech counts only where the canceller's residual-echo suppressor took at most "
        "this much of it (its output against its linear output): what it cuts hard, it "
        "judged to be echo. Keeps a clipping loudspeaker's echo from interrupting the device "
        "(docs/aec.md). 0: no such test.", minimum=0.0, maximum=60.0,
    )
    background_margin_db: float = setting(
        12.0, "Speech interrupts only if it rises this far above the room's own sound (the "
        "quietest of the last second, measured on the echo-cancelled signal) for 120 ms of "
        "the speech: a television, a room of other people or a passing car is speech to the "
        "VAD, but it is the background (docs/aec.md). 0: no such test.", minimum=0.0, maximum=40.0,
    )
    resume_after_false_barge_in: bool = setting(
        True, "When the interrupting speech held no words, resume the reply from the sentence "
        "it stopped in.",
    )
