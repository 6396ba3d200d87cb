"""``edgevoice say "TEXT" [--out FILE.wav] [--json]``: speak text with the configured voice.

With ``--out`` the speech is written to a 16 kHz WAV file (sentence by sentence,
the way a reply is spoken); otherwise it plays on the configured speaker through
the duplex loop. ``--json`` prints ``time_to_first_audio_ms`` (to the first
synthesized chunk with ``--out``, to the first sample played otherwise),
``audio_s``, ``rtf`` (synthesis time over audio time) and ``voice``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.speaking.tts import Synthesizer
from edgevoice.device.assembly.speaking import build_synthesizer
from edgevoice.device.cli.common import EXIT_OK, EXIT_USAGE, add_common_options, load, print_json
from edgevoice.device.config import LoadedConfig
from edgevoice.device.speaking.markdown import SpeakableSplitter


def register(sub: Any) -> None:
    parser = sub.add_parser("say", help="speak text with the configured voice (or write a WAV)")
    parser.add_argument("text", metavar="TEXT", help="what to say (markdown is made speakable)")
    parser.add_argument("--out", type=Path, metavar="FILE.wav", help="write a 16 kHz WAV instead of playing")
    add_common_options(parser, json_output=True)
    parser.set_defaults(func=_say)


def _say(args: argparse.Namespace) -> int:
    if not args.text.strip():
        print("edgevoice say: nothing to say", flush=True)
        return EXIT_USAGE
    loaded = load(args)
    started = time.monotonic()
    synthesizer = build_synthesizer(loaded.config.tts, loaded.config.models.dir or None)
    synthesizer.engine.warm_up()  # a daemon has its voice warm; time the pipeline, not the load
    synthesizer.busy_s = synthesizer.audio_s = 0.0
    load_ms = round((time.monotonic() - started) * 1000.0, 1)
    try:
        if args.out is not None:
            result = asyncio.run(_to_wav(synthesizer, loaded, args.text, args.out))
        else:
            result = asyncio.run(_to_speaker(synthesizer, loaded, args.text))
    finally:
        synthesizer.close()
    result["load_ms"] = load_ms
    if args.json:
        print_json(result)
    else:
        where = f" to {args.out}" if args.out is not None else ""
        print(f"said {result['audio_s']:.2f} s{where} with {result['voice']} "
              f"(first audio {result['time_to_first_audio_ms']:.0f} ms, RTF {result['rtf']:.3f})")
    return EXIT_OK


async def _to_wav(synthesizer: Synthesizer, loaded: LoadedConfig, text: str, out: Path) -> dict[str, Any]:
    from edgevoice.audio.io.wav import write_wav

    tts = loaded.config.tts
    splitter = SpeakableSplitter(tts.max_first_sentence_chars, tts.max_sentence_chars, tts.first_phrase_chars,
                                 follow_growth=tts.follow_growth, min_follow_chars=tts.min_follow_chars)
    gap = np.zeros(SAMPLE_RATE * tts.sentence_gap_ms // 1000, dtype=np.int16)
    parts: list[Pcm] = []
    start = time.monotonic()
    first: float | None = None
    for sentence in splitter.feed(text) + splitter.flush():
        async for audio in synthesizer.stream(sentence):
            first = audio.finished if first is None else first
            if parts and len(gap):
                parts.append(gap)
            parts.append(audio.pcm)
    pcm = np.concatenate(parts) if parts else np.zeros(0, np.int16)
    write_wav(out, pcm)
    return _result(synthesizer, start, first, len(pcm), out=str(out))


async def _to_speaker(synthesizer: Synthesizer, loaded: LoadedConfig, text: str) -> dict[str, Any]:
    from edgevoice.audio.io.duplex import DuplexLoop
    from edgevoice.audio.speaking.playback import Speaker
    from edgevoice.device.assembly.audio_io import duplex_options, open_backend
    from edgevoice.device.assembly.speaking import reply_speaker
    from edgevoice.device.events import EventBus

    config = loaded.config
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    backend = open_backend(config.audio, config.room, config.wav)
    speaker = Speaker(backend.period_samples, volume=config.audio.volume)
    replies = reply_speaker(speaker, synthesizer, bus, config.tts)
    duplex = DuplexLoop(backend, speaker, **duplex_options(config.audio))
    duplex.start(asyncio.get_running_loop())

    async def drain() -> None:
        async for _ in duplex.frames():
            pass

    async def once() -> AsyncIterator[str]:
        yield text

    drainer = asyncio.create_task(drain())
    try:
        outcome = await replies.speak(once(), "say")
    finally:
        duplex.stop()
        drainer.cancel()
        await asyncio.gather(drainer, return_exceptions=True)
    samples = sum(p.total for p in speaker.progress("say"))
    t = outcome.timings
    return _result(synthesizer, t.started, t.first_played, samples, status=str(outcome.status))


def _result(synthesizer: Synthesizer, start: float, first: float | None, samples: int,
            **extra: Any) -> dict[str, Any]:
    audio_s = samples / SAMPLE_RATE
    speech_s = synthesizer.audio_s
    return {
        "time_to_first_audio_ms": round((first - start) * 1000.0, 1) if first is not None else None,
        "audio_s": round(audio_s, 3),
        "rtf": round(synthesizer.busy_s / speech_s, 4) if speech_s > 0 else None,
        "voice": synthesizer.engine.name,
        **extra,
    }
