"""Config → the speaking pipeline: the ``[tts]`` section read once, here.

:func:`build_synthesizer` loads the configured piper voice; :func:`reply_speaker`
makes the :class:`~edgevoice.device.speaking.reply.ReplySpeaker` with the section's
splitter limits and the idle memory release; :func:`apply_splitting` is the live
reload of those limits; :func:`enabled_earcons` reads ``[earcons]``.
"""

from __future__ import annotations

from edgevoice.audio.speaking.playback import Speaker
from edgevoice.audio.speaking.tts import Synthesizer
from edgevoice.device.config.schema import EarconsConfig, TtsConfig
from edgevoice.device.events import EventBus
from edgevoice.device.speaking.reply import ReplySpeaker
from edgevoice.device.system.memory import IdleRelease


def build_synthesizer(tts: TtsConfig, models_dir: str | None = None) -> Synthesizer:
    """The configured piper voice (a registry name or a path) on a worker thread."""
    from edgevoice.audio.speaking.tts_piper import PiperTts
    from edgevoice.models import ModelKind, resolve_model

    location = resolve_model(tts.voice, ModelKind.TTS, models_dir or None)
    engine = PiperTts(location.path, threads=tts.threads, length_scale=tts.length_scale,
                      volume=tts.volume, voice_name=location.name)
    return Synthesizer(engine, max_chunk_chars=tts.max_chunk_chars)


def reply_speaker(speaker: Speaker, synthesizer: Synthesizer, bus: EventBus, tts: TtsConfig) -> ReplySpeaker:
    """A :class:`ReplySpeaker` with the ``[tts]`` section's splitter limits and gap."""
    replies = ReplySpeaker(speaker, synthesizer, bus)
    apply_splitting(replies, tts)
    # Memory: piper's first-piece buffers freed while idle, grown back on listening
    # (device/system/memory.py, docs/runtime.md "Memory"); the bus keeps it alive.
    IdleRelease(bus, synthesizer, tts.idle_release_s)
    return replies


def apply_splitting(replies: ReplySpeaker, tts: TtsConfig) -> None:
    """The ``[tts]`` splitter limits, gap and synthesis chunk (live: the next reply uses
    them); the one place these keys reach the running speaker."""
    replies.synthesizer.max_chunk_chars = tts.max_chunk_chars
    replies.max_first_chars = tts.max_first_sentence_chars
    replies.max_chars = tts.max_sentence_chars
    replies.first_phrase_chars = tts.first_phrase_chars
    replies.first_wait_ms = tts.first_wait_ms
    replies.first_cut_words = tts.first_cut_words
    replies.follow_growth = tts.follow_growth
    replies.min_follow_chars = tts.min_follow_chars
    replies.cut_edge_ms = tts.cut_edge_ms
    replies.sentence_gap_ms = tts.sentence_gap_ms


def enabled_earcons(earcons: EarconsConfig) -> list[str]:
    """The earcons ``[earcons]`` switches on."""
    return [name for name in ("wake", "listening", "thinking", "error", "reset") if getattr(earcons, name)]
