"""Config → the echo canceller and barge-in: ``[aec]`` and ``[barge_in]`` read once, here.

    aec = build_canceller(config.aec)                               # EchoCanceller
    monitor = build_barge_in(config.barge_in, aec, on_mode, vad)    # BargeInMonitor

:func:`barge_in_settings` is the one translation of ``[barge_in]`` into the pure
detector's :class:`~edgevoice.audio.hearing.bargein.BargeInSettings` (live reload uses
it too). Only plain parameters go down into :mod:`edgevoice.audio`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from edgevoice.audio.aec import EchoCanceller, create_canceller
from edgevoice.audio.hearing.bargein import BargeInDetector, BargeInSettings, Mode, SafeMode
from edgevoice.audio.hearing.vad import VadEngine, VadError
from edgevoice.device.config.schema import AecConfig, BargeInConfig
from edgevoice.device.runtime.bargein import BargeInMonitor

_LOGGER = logging.getLogger(__name__)


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
        background_margin_db=barge_in.background_margin_db,
        resume_after_false_barge_in=barge_in.resume_after_false_barge_in,
    )


def build_barge_in(config: BargeInConfig, canceller: EchoCanceller | None,
                   on_mode: Callable[[Mode], None] | None = None,
                   listener_vad: VadEngine | None = None) -> BargeInMonitor:
    """The monitor; with ``[barge_in] vad_signal = "linear"`` it scores the canceller's
    linear output on a second stream of ``listener_vad`` (the listener's engine)."""
    has_reference = canceller is not None and canceller.name != "none"
    origin_s = -canceller.latency_ms / 1000.0 if canceller is not None else 0.0
    linear_vad: VadEngine | None = None
    if config.vad_signal == "linear" and listener_vad is not None:
        try:
            linear_vad = listener_vad.another_stream()
        except VadError as err:
            _LOGGER.info("barge-in VAD on the canceller's output, not its linear output: %s", err)
    detector = BargeInDetector(barge_in_settings(config))
    return BargeInMonitor(detector, has_reference, on_mode, origin_s, linear_vad)
