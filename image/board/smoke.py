"""What the CLI smoke says, hears and checks, for x86 (``installed.py``) and arm64 (``board.py``).

The same words on both, so the arm64 build of piper and pocketsphinx has to give the
answer the x86 one gives.
"""

from __future__ import annotations

from typing import Any

SAY_TEXT = "Hello world."
# a two-phrase grammar keeps pocketsphinx's decode short and its answer exact (piper's
# "Hi." decodes as "bye", so a single word is not a fair check)
GRAMMAR = ("hello world", "good morning")
HEARD = "hello world"

# a 3 s noise reference and its echo 20 ms later at half the level (argv[1] is the folder):
# `edgevoice aec` scores the echo removed after its first 2 s, so the last second counts
MAKE_AEC_PAIR = (
    "import sys\n"
    "import numpy as np\n"
    "from edgevoice.audio.io.wav import write_wav\n"
    "rng = np.random.default_rng(7)\n"
    "ref = (rng.standard_normal(16000 * 3) * 3000).astype(np.int16)\n"
    "mic = np.zeros_like(ref)\n"
    "mic[320:] = ref[:-320] // 2\n"
    "write_wav(sys.argv[1] + '/ref.wav', ref)\n"
    "write_wav(sys.argv[1] + '/mic.wav', mic)\n"
)


class SmokeFailed(Exception):
    """A smoke command ran but did not give what it must."""


def transcribe_args(wav: str) -> list[str]:
    args = ["transcribe", wav, "--engine", "pocketsphinx", "--json"]
    for phrase in GRAMMAR:
        args += ["--grammar", phrase]
    return args


def check_said(result: dict[str, Any]) -> str:
    if not result["audio_s"] > 0.5:
        raise SmokeFailed(f"too little speech for {SAY_TEXT!r}: {result}")
    return (f"{result['voice']}: {result['audio_s']} s of audio, first audio "
            f"{result['time_to_first_audio_ms']} ms, RTF {result['rtf']}")


def check_heard(result: dict[str, Any]) -> str:
    if result["text"] != HEARD:
        raise SmokeFailed(f"heard {result['text']!r} in the synthesized {SAY_TEXT!r}")
    return f"{result['engine']}: {result['text']!r} (RTF {result['rtf']})"


def aec_summary(result: dict[str, Any]) -> str:
    if result["erle_db"] is None or not result["erle_db"] > 20:
        raise SmokeFailed(f"the echo was not removed: {result}")
    return " ".join(f"{k} {v}" for k, v in result.items() if not isinstance(v, (dict, list)))
