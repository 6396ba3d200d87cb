"""``edgevoice transcribe FILE.wav [--json]``: run the configured ASR over a WAV file."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

from edgevoice.audio.io.wav import read_wav
from edgevoice.device.assembly.hearing import build_asr
from edgevoice.device.cli.common import EXIT_OK, add_common_options, load, print_json

CHUNK_SAMPLES = 1600  # feed 100 ms at a time, as the live pipeline does


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "transcribe", help="print what a WAV file says (the configured speech recognizer)",
        description="Transcribe a WAV file with the ASR engine and model the config names "
                    "([asr], device.language); any rate or channel count is converted to 16 kHz mono.",
    )
    parser.add_argument("file", type=Path, metavar="FILE.wav", help="the recording")
    parser.add_argument("--engine", choices=("auto", "vosk", "moonshine", "pocketsphinx"),
                        help="override asr.engine")
    parser.add_argument("--model", help="override asr.model (registry name or model folder)")
    parser.add_argument("--language", help="override device.language (e.g. en, ko)")
    parser.add_argument("--grammar", action="append", metavar="PHRASE",
                        help="recognise only these phrases (repeatable; overrides asr.grammar)")
    add_common_options(parser, json_output=True)
    parser.set_defaults(func=_transcribe)


def _transcribe(args: argparse.Namespace) -> int:
    config = load(args).config
    asr_config = config.asr
    # one file, nothing else running: decode in this process (a worker only costs a spawn)
    changes: dict[str, Any] = {"process": "inline"}
    if args.engine:
        changes["engine"] = args.engine
    if args.model:
        changes["model"] = args.model
    if args.grammar:
        changes["grammar"] = tuple(args.grammar)
    asr_config = dataclasses.replace(asr_config, **changes)
    language = args.language or config.device.language
    pcm, _rate = read_wav(args.file)
    engine = build_asr(asr_config, language, config.models.dir or None)
    try:
        started = time.perf_counter()
        result = engine.transcribe(pcm, chunk_samples=CHUNK_SAMPLES)
        elapsed = time.perf_counter() - started
    finally:
        engine.close()
    audio_s = len(pcm) / 16000
    if args.json:
        print_json({
            "text": result.text,
            "engine": engine.name,
            "model": engine.model_name,
            "language": engine.language,
            "words": [w.as_dict() for w in result.words],
            "confidence": round(result.confidence, 3),
            "low_confidence": result.low_confidence,
            "audio_s": round(audio_s, 3),
            "rtf": round(elapsed / audio_s, 4) if audio_s else 0.0,
        })
    else:
        sys.stdout.write(result.text + "\n")
    return EXIT_OK
