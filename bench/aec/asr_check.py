"""Which ASR set-up hears the clean interruption the same way twice?

    .venv/bin/python bench/aec/asr_check.py [--trials 24] [--modes phrases,grammar]
    .venv/bin/python bench/aec/asr_check.py --korean --modes ko-free,ko-phrases

"Same words as without echo" measures the echo only if the ASR gives the same words
for the *clean* utterance when nothing that matters changes. For each trial of the
barge-in benchmark (no echo canceller involved) the clean utterance is transcribed
as cut, then shifted by 3, 5 and 7 ms with the mic noise re-drawn each time; reported
per ASR set-up: how often the perturbed transcript is identical to the first one, the
word difference between them, and how often the first one is the words said.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bargein_trials import Asr, edit_distance, make_trial, words_only

SHIFTS_MS = (3, 5, 7)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--modes", default="free,phrases,words")
    parser.add_argument("--korean", action="store_true",
                        help="Korean interruptions (espeak-ng's Korean voice), for the ko-* set-ups")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    modes = args.modes.split(",")
    asrs = {m: Asr(m) for m in modes}
    same = dict.fromkeys(modes, 0)
    errors = dict.fromkeys(modes, 0)
    total = dict.fromkeys(modes, 0)
    right = dict.fromkeys(modes, 0)
    cpu = dict.fromkeys(modes, 0.0)
    pairs = 0
    for seed in range(args.trials):
        trial = make_trial(seed, korean=args.korean)
        lo, hi = trial.window()
        said = trial.text.split() if args.korean else words_only(trial.text)
        base_pcm = trial.clean()[lo:hi]
        perturbed = []
        for k, shift_ms in enumerate(SHIFTS_MS):
            rng = np.random.default_rng(77 + 10 * seed + k)
            noise = rng.standard_normal(len(trial.noise)) * float(np.std(trial.noise))
            s = shift_ms * 16
            perturbed.append(trial.clean(noise)[lo + s:hi + s])
        pairs += len(perturbed)
        for m in modes:
            t0 = time.process_time()
            base = asrs[m](base_pcm)
            right[m] += base == said
            for pcm in perturbed:
                other = asrs[m](pcm)
                same[m] += other == base
                errors[m] += edit_distance(other, base)
                total[m] += len(base)
                if args.verbose and other != base:
                    print(f"  {seed} {m}: {' '.join(base)!r} vs {' '.join(other)!r}")
            cpu[m] += time.process_time() - t0
        print(f"trial {seed} done", flush=True)
    print()
    print("| ASR set-up | clean vs shifted clean: identical | word difference "
          "| clean transcript = words said | CPU s |")
    print("|---|---|---|---|---|")
    for m in modes:
        print(f"| {m} | {same[m]}/{pairs} | {100 * errors[m] / max(total[m], 1):.1f}% "
              f"| {right[m]}/{args.trials} | {cpu[m]:.1f} |")
    print(f"\nshifts {SHIFTS_MS} ms, the mic noise re-drawn for each; {args.trials} trials.")


if __name__ == "__main__":
    main()
