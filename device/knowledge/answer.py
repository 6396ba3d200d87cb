"""What the built-in local agent says from knowledge (pure).

A Q/A entry's answer is said as written. For prose, the sentences of the chunk that
share the most of the question's terms are said (at most two, in their order), made
speakable the way every reply is (markdown markers dropped, links read as their text).
Below the confidence threshold nothing is chosen and the agent says it does not know.
When the re-ranker ran (rerank.py), its decision replaces the confidence threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.knowledge.chunking import ChunkKind
from edgevoice.device.knowledge.retrieval import Passage, Retrieval, content_words
from edgevoice.device.speaking.markdown import speakable

MAX_PROSE_CHARS = 320


@dataclass(frozen=True, slots=True)
class KnowledgeAnswer:
    text: str
    passage: Passage


def choose_answer(retrieval: Retrieval | None, *, answer_score: float) -> KnowledgeAnswer | None:
    """The answer to say, or ``None`` when no chunk is confident enough."""
    if retrieval is None:
        return None
    if retrieval.answers is not None:
        # The re-ranker decided (rerank.py): its best chunk, or nothing.
        best = retrieval.best
        if not retrieval.answers or best is None:
            return None
    else:
        if not retrieval.passages or retrieval.passages[0].confidence < answer_score:
            return None
        best = retrieval.passages[0]
    if best.kind is ChunkKind.QA:
        text = " ".join(speakable(best.body))
    else:
        text = prose_answer(best.body, retrieval.terms)
    return KnowledgeAnswer(text, best) if text else None


def _stem_match(word: str, term: str) -> bool:
    """Whether ``word`` is (roughly) a form of the porter stem ``term``."""
    if word.startswith(term):
        return True
    shared = 0
    for a, b in zip(word, term, strict=False):
        if a != b:
            break
        shared += 1
    return shared >= 4 and shared >= len(term) - 1


def prose_answer(body: str, terms: tuple[str, ...]) -> str:
    sentences = speakable(body)
    if not sentences:
        return ""
    scores = []
    for sentence in sentences:
        words = content_words(sentence)
        scores.append(sum(1 for t in terms if any(_stem_match(w, t) for w in words)))
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    chosen = [best]
    runner_up = sorted((i for i in range(len(sentences)) if i != best and scores[i] > 0),
                       key=lambda i: (-scores[i], abs(i - best)))
    if runner_up and len(sentences[best]) + len(sentences[runner_up[0]]) <= MAX_PROSE_CHARS:
        chosen.append(runner_up[0])
    elif best + 1 < len(sentences) and len(sentences[best]) < 80:
        chosen.append(best + 1)  # a short sentence alone rarely answers
    return " ".join(sentences[i] for i in sorted(chosen))


def dont_know(topics: tuple[str, ...]) -> str:
    """The local agent's "I don't know", with what it can do instead."""
    if topics:
        about = topics[0] if len(topics) == 1 else ", ".join(topics[:-1]) + " and " + topics[-1]
        return (f"Sorry, I don't know that. I can answer questions about {about}, "
                "and tell you the time or the date.")
    return "Sorry, I don't know that. I can tell you the time or the date, or tell you a short story."
