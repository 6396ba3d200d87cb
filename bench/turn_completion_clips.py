"""The labelled clips of ``bench/turn_completion.py``: complete and incomplete turns, their
voices and conditions, split once into a tuning and a validation set (see that file)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from support.hearing_audio import espeak_speech, piper_speech, rms_dbfs
from turn_completion_text import TUNING_PARTICLE, VALIDATION_PARTICLE, break_kind

from edgevoice.audio.frames import SAMPLE_RATE, Pcm

SEED = 17
LEAD_S = 0.5
TAIL_S = 3.0  # after the last speech: longer than the longest end silence tried
PAUSE_S = (0.6, 1.5)
# A hesitation inside a finished request: shorter than the shipped 600 ms end silence
# (with the VAD's ~100 ms release), long enough that an early final may run in it.
HESITATION_S = (0.12, 0.45)

# (sentences, voices) of each set; "piper" is the bundled voice, the rest espeak-ng.
TUNING_COMPLETE = (
    "set a timer for ten minutes.", "what is the weather like tomorrow?",
    "turn off the lights in the living room.", "play some jazz in the kitchen.",
    "how long does it take to boil an egg?", "remind me to call my sister at six.",
    "what time is it in tokyo?", "add milk and eggs to the shopping list.",
    "i would like to book a table for two at eight.", "tell me a joke.",
    "is it going to rain this afternoon?", "turn the volume down a little.",
)
VALIDATION_COMPLETE = (
    "wake me up at seven tomorrow morning.", "what is the capital of australia?",
    "switch on the heating in the bedroom.", "how many ounces are in a pound?",
    "send a message to tom saying i am running late.", "play the news.",
    "what did i put on my calendar for friday?", "dim the lights to fifty percent.",
    "how far is the moon from the earth?", "stop the music.",
    "can you read me the recipe again?", "set an alarm for half past six.",
)
# (the fragment before the pause, the continuation after it)
TUNING_INCOMPLETE = (
    ("i'd like to book a table for, um,", "four people on saturday."),
    ("set a timer for", "twenty minutes."),
    ("add bread, butter, and", "some orange juice to the list."),
    ("remind me to call", "the dentist tomorrow."),
    ("what is the weather going to be like in", "paris next week?"),
    ("turn on the lights in the", "kitchen please."),
    ("can you play, uh,", "something by the beatles?"),
    ("i need to buy apples, bananas,", "and a bag of rice."),
    ("tell me how to get to the", "train station."),
    ("send a message to my mother and", "tell her i will be late."),
    ("how long should i cook the, um,", "pasta for?"),
    ("put a meeting in my calendar with", "john at three."),
)
VALIDATION_INCOMPLETE = (
    ("i want to order a pizza with, uh,", "mushrooms and olives."),
    ("wake me up at", "six thirty tomorrow."),
    ("what is on the news about", "the elections?"),
    ("play the song that goes, um,", "something about the rain."),
    ("could you call my", "brother for me?"),
    ("we need eggs, flour, sugar, and", "a bit of salt."),
    ("switch off the heating and", "lock the front door."),
    ("how far is it from here to", "the airport?"),
    ("set the thermostat to", "twenty one degrees."),
    ("remind me to pick up the, uh,", "dry cleaning on monday."),
    ("what time does the", "pharmacy close today?"),
    ("tell my wife that i will be home by", "nine tonight."),
)
TUNING_VOICES = ("piper", "en-us", "en-gb-x-rp+f3")
VALIDATION_VOICES = ("piper", "en-us", "en-gb-scotland+m3")  # the last one: validation only
CONDITIONS = ("clean", "fan", "babble", "echo")
ECHO_TEXT = ("Here is the weather for today. Expect sunshine in the morning with clouds building "
             "in the afternoon, and a chance of light rain after six. Tomorrow looks cooler.")
BABBLE_TEXTS = ("the meeting was moved to thursday afternoon", "she said the train was late again",
                "we should paint the fence before the summer", "nobody knew where the keys were",
                "the shop on the corner sells fresh bread", "he forgot to water the plants")

# --- the labelled set ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Clip:
    set: str  # tuning | validation
    label: str  # complete | incomplete
    kind: str  # complete | said | cut | particle (a complete turn ending on a particle)
    voice: str
    condition: str
    text: str
    audio: Pcm = field(repr=False)
    speech_end_s: float  # the true end of the last speech
    pause_s: tuple[float, float] | None  # incomplete: (start, end) of the mid-phrase pause
    brk: str = ""  # incomplete: how it breaks off (turn_completion_text.BREAK_KINDS)
    hesitations_s: tuple[tuple[float, float], ...] = ()  # hesitant: (start, end) of each pause

    @property
    def key(self) -> str:
        return f"{self.set}|{self.kind}|{self.voice}|{self.condition}|{self.text}"


def speech(text: str, voice: str, speed: int) -> Pcm:
    said: Pcm = piper_speech(text) if voice == "piper" else espeak_speech(text, voice, speed)
    return said


def cut_point(full: Pcm, fragment_len: int) -> int:
    """The quietest 20 ms near where the fragment ends in the whole sentence: a word boundary
    (TTS runs words together, so the cut is at the least energy, not at a silence)."""
    hop = 160
    lo, hi = int(0.75 * fragment_len), min(len(full) - 4 * hop, int(1.1 * fragment_len))
    energy = np.array([np.mean(full[i:i + 2 * hop].astype(np.float64) ** 2) for i in range(lo, hi, hop)])
    return lo + int(np.argmin(energy)) * hop + hop


def shaped_noise(n: int, rng: np.random.Generator, slope: float) -> np.ndarray:
    """Noise with a 1/f^slope power spectrum above 60 Hz (a fan: most energy low)."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / SAMPLE_RATE)
    spectrum *= 1.0 / np.maximum(f, 60.0) ** (slope / 2)
    out = np.fft.irfft(spectrum, n)
    return np.asarray(out / (np.std(out) + 1e-12))


def babble(n: int, rng: np.random.Generator) -> np.ndarray:
    """Five espeak-ng talkers at once, each looping its sentence from a random offset."""
    out = np.zeros(n)
    for i, text in enumerate(rng.permutation(np.array(BABBLE_TEXTS))[:5]):
        talker = espeak_speech(str(text), ("en-us+m1", "en-gb+f2", "en+m4", "en-us+f4", "en+m2")[i], 170)
        talker = np.concatenate((talker, np.zeros(SAMPLE_RATE // 3, np.int16))).astype(np.float64)
        loop = np.tile(talker, n // len(talker) + 2)
        start = int(rng.integers(len(talker)))
        out += loop[start:start + n] / (np.std(talker) + 1e-12)
    return out / (np.std(out) + 1e-12)


def mix(parts: Sequence[tuple[float, Pcm]], total: int, condition: str, rng: np.random.Generator,
        level_db: float) -> Pcm:
    out = np.zeros(total)
    for at, piece in parts:
        a = round(at * SAMPLE_RATE)
        out[a:a + len(piece)] += piece
    level = rms_dbfs(np.concatenate([p for _, p in parts]))
    out *= 10 ** ((level_db - level) / 20)
    talker_rms = 10 ** (level_db / 20) * 32768.0
    if condition == "fan":
        out += shaped_noise(total, rng, 1.0) * talker_rms * 10 ** (-25 / 20)
    elif condition == "babble":
        out += babble(total, rng) * talker_rms * 10 ** (-20 / 20)
    if condition != "clean":  # a real microphone's own noise floor under everything
        out += rng.standard_normal(total) * talker_rms * 10 ** (-50 / 20)
    if condition == "echo":
        # The device was speaking when the person began (a barge-in): the canceller's residue
        # of its own voice runs under the first words until playback stops, then dies away.
        # (Residue that runs on through the pauses keeps Silero's speech decision on, so no
        # endpointer ends the turn at all: that is the VAD's and the canceller's problem.)
        far = piper_speech(ECHO_TEXT).astype(np.float64)
        start = int(rng.integers(len(far) // 2))
        stop = min(total, round((LEAD_S + rng.uniform(0.4, 1.0)) * SAMPLE_RATE))
        far = far[start:start + stop]
        fade = np.clip((stop - np.arange(len(far))) / (0.15 * SAMPLE_RATE), 0.0, 1.0)
        out[:len(far)] += far * fade / (np.std(far) + 1e-12) * talker_rms * 10 ** (-20 / 20)
    return np.clip(np.rint(out), -32768, 32767).astype(np.int16)


def _requests(set_name: str, quick: bool) -> tuple[Sequence[str], Sequence[str], Sequence[str]]:
    """The set's finished requests, its voices and the conditions (``quick``: the first two
    requests, clean and echo only)."""
    complete: Sequence[str] = TUNING_COMPLETE if set_name == "tuning" else VALIDATION_COMPLETE
    voices = TUNING_VOICES if set_name == "tuning" else VALIDATION_VOICES
    if quick:
        return complete[:2], voices, ("clean", "echo")
    return complete, voices, CONDITIONS


def make_clips(set_name: str, quick: bool) -> list[Clip]:
    complete, voices, conditions = _requests(set_name, quick)
    tuning = set_name == "tuning"
    particle: Sequence[str] = TUNING_PARTICLE if tuning else VALIDATION_PARTICLE
    incomplete: Sequence[tuple[str, str]] = TUNING_INCOMPLETE if tuning else VALIDATION_INCOMPLETE
    if quick:
        incomplete, particle = incomplete[:2], particle[:2]
    clips = []
    rng = random.Random(f"{SEED}:{set_name}")
    for voice in voices:
        for condition in conditions:
            for text in complete:
                speed = rng.randint(150, 180)
                said = speech(text, voice, speed)
                nrng = np.random.default_rng(rng.getrandbits(32))
                total = round((LEAD_S + TAIL_S) * SAMPLE_RATE) + len(said)
                audio = mix([(LEAD_S, said)], total, condition, nrng, rng.uniform(-30, -22))
                clips.append(Clip(set_name, "complete", "complete", voice, condition, text, audio,
                                  LEAD_S + len(said) / SAMPLE_RATE, None))
            for fragment, rest in incomplete:
                speed = rng.randint(150, 180)
                head = speech(fragment, voice, speed)
                for kind in ("said", "cut"):
                    if kind == "said":
                        first, second = head, speech(rest, voice, speed)
                    else:
                        whole = speech(f"{fragment} {rest}", voice, speed)
                        at = cut_point(whole, len(head))
                        first, second = whole[:at], whole[at:]
                    pause = rng.uniform(*PAUSE_S)
                    resume = LEAD_S + len(first) / SAMPLE_RATE + pause
                    end = resume + len(second) / SAMPLE_RATE
                    nrng = np.random.default_rng(rng.getrandbits(32))
                    total = round((end + TAIL_S) * SAMPLE_RATE)
                    audio = mix([(LEAD_S, first), (resume, second)], total, condition, nrng,
                                rng.uniform(-30, -22))
                    clips.append(Clip(set_name, "incomplete", kind, voice, condition,
                                      f"{fragment} … {rest}", audio, end,
                                      (LEAD_S + len(first) / SAMPLE_RATE, resume), break_kind(fragment)))
    # the particle family draws its own random numbers, after the rest: the clips above are
    # the same as in the runs before it existed
    for voice in voices:
        for condition in conditions:
            for text in particle:
                speed = rng.randint(150, 180)
                said = speech(text, voice, speed)
                nrng = np.random.default_rng(rng.getrandbits(32))
                total = round((LEAD_S + TAIL_S) * SAMPLE_RATE) + len(said)
                audio = mix([(LEAD_S, said)], total, condition, nrng, rng.uniform(-30, -22))
                clips.append(Clip(set_name, "complete", "particle", voice, condition, text, audio,
                                  LEAD_S + len(said) / SAMPLE_RATE, None))
    return clips


def make_hesitant_clips(set_name: str, quick: bool) -> list[Clip]:
    """The set's finished requests again, each said with one or two hesitations inside it
    (``HESITATION_S``, after a random word): the pauses a person makes while choosing the
    next word, which the clips of :func:`make_clips` do not have. Each sentence is
    synthesized whole and cut at word boundaries (:func:`cut_point`), so the words keep
    mid-sentence prosody, as a hesitation does. Its own random numbers: the other clips
    are unchanged by it."""
    complete, voices, conditions = _requests(set_name, quick)
    clips = []
    rng = random.Random(f"{SEED}:{set_name}:hesitant")
    for voice in voices:
        for condition in conditions:
            for text in complete:
                speed = rng.randint(150, 180)
                words = text.split()
                after = sorted(rng.sample(range(1, len(words)), min(len(words) - 1, rng.choice((1, 2)))))
                whole = speech(text, voice, speed)
                points: list[tuple[int, int]] = []  # (after which word, sample)
                for i in after:
                    at_sample = cut_point(whole, len(speech(" ".join(words[:i]), voice, speed)))
                    if not points or at_sample > points[-1][1] + SAMPLE_RATE // 10:  # 100 ms apart
                        points.append((i, at_sample))
                after = [i for i, _ in points]
                pieces = np.split(whole, [c for _, c in points])
                parts: list[tuple[float, Pcm]] = []
                pauses: list[tuple[float, float]] = []
                at = LEAD_S
                for k, piece in enumerate(pieces):
                    parts.append((at, piece))
                    at += len(piece) / SAMPLE_RATE
                    if k < len(pieces) - 1:
                        pause = rng.uniform(*HESITATION_S)
                        pauses.append((at, at + pause))
                        at += pause
                nrng = np.random.default_rng(rng.getrandbits(32))
                audio = mix(parts, round((at + TAIL_S) * SAMPLE_RATE), condition, nrng, rng.uniform(-30, -22))
                bounds = zip([0, *after], [*after, len(words)], strict=True)
                shown = " … ".join(" ".join(words[a:b]) for a, b in bounds)
                clips.append(Clip(set_name, "complete", "hesitant", voice, condition, shown, audio, at, None,
                                  hesitations_s=tuple(pauses)))
    return clips
