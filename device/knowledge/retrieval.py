"""One turn's text in, the chunks that answer it out, each with a confidence.

BM25 (through FTS5) ranks; it cannot say whether the best chunk actually answers
the question, because its scores are not comparable from one query to the next.
The confidence is: of the question's content words, weighted by how rare they are
in the index (IDF), the share the chunk contains; for a Q/A entry, also the share of
the entry's own question words the person used (so "what time is it" does not
confidently match "what time does the café open"). The two are combined as a
geometric mean. A turn *matched* when its best chunk clears ``[knowledge] min_score``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from edgevoice.device.knowledge.chunking import Candidate, Chunk, ChunkKind

# Function words and question scaffolding: they would match every chunk.
STOPWORDS = frozenset([
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "can't", "cannot", "could", "couldn't", "did", "didn't", "do", "does",
    "doesn't", "doing", "don't", "during", "each", "few", "for", "from", "further", "had", "hadn't",
    "has", "hasn't", "have", "haven't", "having", "he", "he'd", "he'll", "he's", "her", "here",
    "here's", "hers", "herself", "him", "himself", "his", "how", "how's", "i", "i'd", "i'll", "i'm",
    "i've", "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "let's", "me", "more",
    "most", "mustn't", "my", "myself", "no", "nor", "not", "of", "on", "once", "only", "or",
    "other", "ought", "our", "ours", "ourselves", "own", "same", "shan't", "she", "she'd", "she'll",
    "she's", "should", "shouldn't", "so", "some", "such", "than", "that", "that's", "the", "their",
    "theirs", "them", "themselves", "then", "there", "there's", "these", "they", "they'd",
    "they'll", "they're", "they've", "this", "those", "through", "to", "too", "under", "until",
    "very", "was", "wasn't", "we", "we'd", "we'll", "we're", "we've", "were", "weren't", "what",
    "what's", "when", "when's", "where", "where's", "which", "while", "who", "who's", "whom", "why",
    "why's", "with", "won't", "would", "wouldn't", "you", "you'd", "you'll", "you're", "you've",
    "your", "yours", "yourself", "yourselves", "please", "tell", "know", "want", "wanted", "like",
    "need", "needs", "would", "could", "may", "might", "must", "shall", "will", "just", "also",
    "really", "actually", "anything", "something", "thing", "things", "get", "got", "go", "going",
    "kind", "sort", "lot", "lots", "way", "excuse", "hi", "hello", "hey", "um", "uh", "okay", "ok",
    "well", "yes", "yeah", "sir", "madam", "there's", "any"
])

# Everyday equivalents a visitor uses for what a knowledge file says: a question word
# also matches the others of its group. Generic English, not any one knowledge base.
SYNONYMS: tuple[frozenset[str], ...] = tuple(frozenset(group.split()) for group in (
    "photo photograph photography picture pictures camera",
    "dog puppy pet",
    "toilet toilets bathroom restroom loo wc lavatory",
    "pharmacy chemist drugstore",
    "complain complaint",
    "price cost fee charge expensive",
    "kid kids child children",
    "bike bicycle cycle",
    "lift elevator",
    "buy purchase",
    "book booking reserve reservation",
    "jab shot vaccine vaccination immunisation",
    "ticket admission",
    "phone telephone ring",
    "doctor gp physician",
    "medicine medication tablets pills",
    "taxi cab",
    "luggage bags suitcase suitcases",
    "wifi internet",
))
COMMON_SHARE = 0.08
COMMON_MIN_DOCS = 60
_SYNONYMS_OF = {word: group for group in SYNONYMS for word in group}

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


@dataclass(frozen=True, slots=True)
class Passage:
    """A retrieved chunk: what it says, where it came from, how sure the match is."""

    key: str
    kind: ChunkKind
    heading: str
    question: str
    body: str
    source: str
    bm25: float
    confidence: float  # 0..1, see the module docstring
    matched: tuple[str, ...] = ()  # the question's (stemmed) terms the chunk contains
    rerank: float | None = None  # the cross-encoder's logit, when re-ranking ran (rerank.py)

    def as_context(self) -> str:
        """The string the agent contract's ``context`` carries for this passage."""
        return Chunk(self.key, self.kind, self.heading, self.question, self.body).as_context()

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "kind": str(self.kind), "heading": self.heading,
                "text": self.as_context(), "source": self.source, "bm25": round(self.bm25, 4),
                "confidence": round(self.confidence, 4), "matched": list(self.matched),
                **({"rerank": round(self.rerank, 4)} if self.rerank is not None else {})}


@dataclass(frozen=True, slots=True)
class Retrieval:
    """One turn's retrieval. ``passages`` holds only chunks over ``min_score``."""

    passages: tuple[Passage, ...] = ()
    topics: tuple[str, ...] = ()  # the knowledge base titles, for "I can tell you about..."
    elapsed_ms: float = 0.0
    best: Passage | None = None  # the best chunk even when it did not clear min_score
    terms: tuple[str, ...] = field(default=())
    # Set by the re-ranker (rerank.py): the probability that ``best`` answers the turn,
    # and whether that clears its threshold. ``None``: no re-ranking ran.
    answer_p: float | None = None
    answers: bool | None = None

    @property
    def matched(self) -> bool:
        return bool(self.passages)

    def context(self) -> list[str]:
        return [p.as_context() for p in self.passages]


class IndexView(Protocol):
    """What retrieval needs from an index (:class:`~.index.KnowledgeIndex`)."""

    total: int

    def stems(self, text: str) -> list[str]: ...

    def document_frequency(self, term: str) -> int: ...

    def candidates(self, match: str, limit: int) -> list[Candidate]: ...


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry meaning, lower case, in order, once each."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower().replace("’", "'")):
        if word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
            seen.setdefault(word, None)
    return list(seen)


def match_expression(words: list[str]) -> str:
    """An FTS5 query: any of the words (each quoted, so none is an operator)."""
    return " OR ".join('"' + w.replace('"', "") + '"' for w in words)


def idf(total: int, frequency: int) -> float:
    return math.log(1.0 + (total - frequency + 0.5) / (frequency + 0.5))


def retrieve(index: IndexView, text: str, *, top_k: int, min_score: float, candidates: int = 12) -> Retrieval:
    """The passages for ``text``: BM25's best ``candidates``, re-ranked by confidence."""
    words = content_words(text)
    if not words or index.total == 0:
        return Retrieval()

    def idf_of(term: str) -> float:
        return idf(index.total, index.document_frequency(term))

    # One query term per word: its stem, and the stems of its synonyms that occur.
    groups: dict[str, frozenset[str]] = {}
    spelled: dict[str, list[str]] = {}
    for word in words:
        own = index.stems(word)
        if not own:
            continue
        alternatives = sorted(_SYNONYMS_OF.get(word, {word}) | {word})
        stems = index.stems(" ".join(alternatives)) if len(alternatives) > 1 else own
        present = frozenset(t for t in stems if index.document_frequency(t) > 0) | {own[0]}
        if own[0] not in groups:
            groups[own[0]] = present
            spelled[own[0]] = alternatives
    if not groups:
        return Retrieval()
    frequency = {t: sum(index.document_frequency(x) for x in g) for t, g in groups.items()}
    # BM25 must score every chunk that holds any query word: at 5 000 chunks a word in a
    # third of them costs milliseconds and decides nothing. Ask only for the words rarer
    # than COMMON_SHARE of the index (all of them in a small index); the confidence
    # still counts every word.
    common = max(COMMON_MIN_DOCS, COMMON_SHARE * index.total)
    asked = [t for t in groups if 0 < frequency[t] <= common]
    if asked:
        expression = match_expression(list(dict.fromkeys(w for t in asked for w in spelled[t])))
    else:
        # Only common words: the chunks that hold all of them (each word or its synonyms).
        known = [t for t in groups if frequency[t] > 0]
        if not known:
            return Retrieval()
        expression = " AND ".join(f"({match_expression(spelled[t])})" for t in known)
    found = index.candidates(expression, max(candidates, top_k))
    if not found and not asked:
        rarest = min((t for t in groups if frequency[t] > 0), key=lambda t: frequency[t])
        found = index.candidates(match_expression(spelled[rarest]), max(candidates, top_k))
    if not found:
        return Retrieval()
    terms = list(groups)
    # A word the index never saw keeps its (high) weight, so an unknown subject keeps
    # the confidence low; a known synonym stands in at the weight of the rarest one used.
    weight = {t: idf_of(t) if index.document_frequency(t) or len(g) == 1 else
              min(idf_of(x) for x in g if x != t) for t, g in groups.items()}
    passages = [score(c, weight, idf_of, groups) for c in found]
    top_bm25 = max(p.bm25 for p in passages) or 1.0
    # Confidence decides; BM25 (relative to the query's best) breaks near-ties.
    passages.sort(key=lambda p: p.confidence + 0.15 * p.bm25 / top_bm25, reverse=True)
    kept = tuple(p for p in passages if p.confidence >= min_score)[:top_k]
    return Retrieval(passages=kept, best=passages[0], terms=tuple(terms))


def score(candidate: Candidate, weight: dict[str, float], idf_of: Callable[[str], float],
          groups: dict[str, frozenset[str]] | None = None) -> Passage:
    total = sum(weight.values()) or 1.0
    groups = groups or {t: frozenset({t}) for t in weight}
    matched = tuple(t for t in weight if groups.get(t, frozenset({t})) & candidate.terms)
    asked = {x for t in weight for x in groups.get(t, frozenset({t}))}
    coverage = sum(weight[t] for t in matched) / total
    confidence = coverage
    if candidate.kind is ChunkKind.QA and candidate.phrasings:
        # How much of what the entry is about did the person ask about? The best of its
        # phrasings, IDF-weighted the same way.
        reach = 0.0
        for phrasing in candidate.phrasings:
            whole = sum(idf_of(t) for t in phrasing) or 1.0
            reach = max(reach, sum(idf_of(t) for t in phrasing if t in asked) / whole)
        confidence = math.sqrt(coverage * max(reach, 0.5 * coverage))
    return Passage(
        key=candidate.key, kind=candidate.kind, heading=candidate.heading, question=candidate.question,
        body=candidate.body, source=candidate.path, bm25=candidate.bm25, confidence=confidence,
        matched=matched,
    )
