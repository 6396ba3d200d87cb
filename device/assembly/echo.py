"""Build the echo canceller and the barge-in detector the configuration names.

    aec = build_canceller(config.aec)              # EchoCanceller
    detector = build_barge_in(config.barge_in)     # BargeInDetector

Only plain parameters go down into :mod:`edgevoice.audio`.
"""

from __future__ import annotations

from edgevoice.audio.aec import EchoCanceller, create_canceller
from edgevoice.audio.hearing.bargein import BargeInDetector, BargeInSettings, SafeMode
from edgevoice.device.config.schema import AecConfig, BargeInConfig


def build_canceller(aec: AecConfig, engine: str | None = None) -> EchoCanceller:
    """The configured engine (or ``engine`` when given, e.g. from the command line)."""
    name = engine or aec.engine
    if name == "edgevoice":
        return create_canceller(name, filter_ms=aec.filter_ms, max_delay_ms=aec.max_delay_ms,
                                suppression_db=aec.suppression_db)
    if name == "speex":
        return create_canceller(name, filter_ms=max(aec.filter_ms, aec.max_delay_ms))
    return create_canceller(name)


def barge_in_settings(barge_in: BargeInConfig) -> BargeInSettings:
    return BargeInSettings(
        enabled=barge_in.enabled,
        min_speech_ms=barge_in.min_speech_ms,
        min_words=barge_in.min_words,
        vad_threshold=barge_in.vad_threshold,
        margin_db=barge_in.margin_db,
        safe_mode=SafeMode(barge_in.safe_mode),
        safe_vad_threshold=barge_in.safe_vad_threshold,
        safe_min_speech_ms=barge_in.safe_min_speech_ms,
        degrade_ms=barge_in.degrade_ms,
        max_suppression_db=barge_in.max_suppression_db,
        resume_after_false_barge_in=barge_in.resume_after_false_barge_in,
    )


def build_barge_in(barge_in: BargeInConfig) -> BargeInDetector:
    return BargeInDetector(barge_in_settings(barge_in))
