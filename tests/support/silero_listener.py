"""A :class:`Listener` behind the real Silero VAD (the registry's model), and what it hears
of some audio fed in 10 ms frames: the hearing tests' common set-up."""

from __future__ import annotations

from typing import Any

from support.hearing_audio import frames

from edgevoice.audio.frames import Pcm
from edgevoice.audio.hearing.asr import AsrEngine
from edgevoice.audio.hearing.endpoint import EndpointSettings
from edgevoice.audio.hearing.events import HearingEvent
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.vad import VoiceActivity
from edgevoice.audio.hearing.vad_silero import SileroVad
from edgevoice.models import ModelKind, resolve_model

ENDPOINT = EndpointSettings(end_silence_ms=600, pre_roll_ms=300)


def silero_listener(asr: AsrEngine | None, **kwargs: Any) -> Listener:
    kwargs.setdefault("endpoint", ENDPOINT)
    return Listener(VoiceActivity(SileroVad(resolve_model("silero-vad", ModelKind.VAD).path)), asr, **kwargs)


def heard(listener: Listener, audio: Pcm) -> list[HearingEvent]:
    """Every event of ``audio``; the listener is closed afterwards."""
    try:
        return [e for f in frames(audio) for e in listener.process(f)]
    finally:
        listener.close()


def listen(asr: AsrEngine, audio: Pcm, early_final_ms: float) -> list[HearingEvent]:
    return heard(silero_listener(asr, early_final_ms=early_final_ms), audio)
