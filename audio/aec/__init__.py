"""Echo cancellation: one interface (:class:`EchoCanceller`), several engines.

    from edgevoice.audio.aec import create_canceller, ENGINES
    aec = create_canceller("edgevoice", filter_ms=200)
    out = aec.process(mic_period, reference_period)   # 160 int16 samples each
    aec.stats   # AecStats: delay_ms, erle_db, converged, reference_ok, residual_echo_dbfs

Engines: ``edgevoice`` (default, numpy with a compiled C kernel), ``speex`` (libspeexdsp through ctypes),
``webrtc`` (WebRTC AEC3 through livekit), ``none`` (passthrough).
"""

from __future__ import annotations

from typing import Any

from edgevoice.audio.aec.base import PERIOD_SAMPLES, AecError, AecStats, EchoCanceller

ENGINES = ("edgevoice", "speex", "webrtc", "none")


def create_canceller(engine: str, **options: Any) -> EchoCanceller:
    """Build an engine by name. ``options`` go to its constructor: ``filter_ms`` for
    edgevoice and speex, ``max_delay_ms`` and ``suppression_db`` for edgevoice."""
    if engine == "edgevoice":
        from edgevoice.audio.aec.engine import EdgevoiceCanceller

        return EdgevoiceCanceller(**options)
    if engine == "speex":
        from edgevoice.audio.aec.speex import SpeexCanceller

        return SpeexCanceller(**{k: v for k, v in options.items() if k == "filter_ms"})
    if engine == "webrtc":
        from edgevoice.audio.aec.webrtc import WebrtcCanceller

        return WebrtcCanceller()
    if engine == "none":
        from edgevoice.audio.aec.none import PassthroughCanceller

        return PassthroughCanceller()
    raise AecError(f"unknown echo canceller {engine!r}; choose one of {', '.join(ENGINES)}")


__all__ = ["ENGINES", "PERIOD_SAMPLES", "AecError", "AecStats", "EchoCanceller", "create_canceller"]
