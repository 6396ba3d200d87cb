"""Has the person finished? What the words so far say, from English grammar alone.

Pure: no clock, no I/O, no model. :func:`unfinished_by` reads a transcript (the
recognizer's early final, taken inside the closing silence) and says why the person is
mid-thought, or ``None`` when the words could end a turn. A person who stops on "for",
"the", "and" or "um" has not finished: an English sentence cannot end on a word that
needs a complement after it.

The words were chosen from the grammar of English function words (closed classes: the
list of each class is short and fixed), not from any benchmark's sentences:

- **Fillers** (um, uh, er, erm, hmm and their spellings): the person is thinking aloud.
- **Articles** (a, an, the) and the determiner **every**: they open a noun phrase and are
  never its last word.
- **Possessive determiners** (my, your, our, their, its): the same. "his" and "her" are
  left out: they are also pronouns that end sentences ("it's his", "call her").
- **Coordinating conjunctions** (and, or, but, nor): they join two things; the second has
  not come. "so" and "yet" are left out: they are also adverbs ("I think so", "not yet").
- **Subordinators that take a clause** (because, if, unless, whether, although, whereas):
  the clause has not come. "though", "since", "while", "when" are left out: they also end
  sentences as adverbs or nouns ("for a while", "ever since").
- **Prepositions that are never adverbs** (to, for, of, with, from, at, into, onto, as,
  than, until, upon, toward(s), per, via, during, among(st), despite, except, versus,
  amid(st), unto): they need an object, unless the object was moved to the front of the
  sentence and the preposition left behind ("stranded"). Stranding needs a moved noun
  phrase, and in a request that is a wh-word: "what is this for", "who is it from",
  "what are you up to", "where are you from". So these words count as unfinished only
  when no noun wh-word (what, who, whom, which, whose and their -ever forms; "where" for
  to, from and at) comes before them. "how", "when" and "why" move an adverb, never a noun
  phrase, so they cannot strand a preposition ("how far is it to" is unfinished).
- **Prepositions that are also adverbial particles** (on, off, up, down, in, out, over,
  about, by, through, around, back, away, ...) are never taken as unfinished: they end
  everyday complete commands as the particle of a phrasal verb ("turn it on", "turn the
  music down", "speak up"), and telling the particle from the preposition needs a parser.
  "set it on" is missed; "turn the lights off" is never delayed.
- **A mark the recognizer wrote after the last word** that says more follows: a comma, a
  semicolon, a colon, a dash or an ellipsis ("apples, bananas,"). Moonshine writes these;
  vosk and pocketsphinx write none, so there only the words count.

- **A word the recognizer heard and left out.** Moonshine learned from cleaned transcripts:
  it often leaves a trailing "uh", "and" or "in" out of the text, though the audio holds it
  ("can you play, uh," is written "Can you play?"). Where its decode stopped, it says which
  words it weighed writing instead (``next_words``, with their probabilities). Each is
  read as if it had been written; when the ones that would leave the person mid-thought
  reach :data:`LEFT_OUT_WEIGHT` together, the pause is read as mid-thought. A left-out
  word that could end the turn holds nothing. vosk and pocketsphinx write every word they
  hear and say nothing of the kind; nor does libmoonshine, which gives no scores.

What it gets wrong, by construction: a complete turn that strands a preposition without a
wh-word (a passive "it's been paid for", a relative clause without its pronoun "the song I
was listening to") or ends in an elided verb after "to" ("yes, I'd like to") reads as
unfinished, and waits the longer silence; a turn broken off on a content word ("remind me
to call") or on a particle ("what is the weather like in") reads as finished.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Unfinished(StrEnum):
    """Why the words so far are mid-thought."""

    MARK = "mark"  # a comma, semicolon, colon, dash or ellipsis after the last word
    FILLER = "filler"
    ARTICLE = "article"  # articles and "every"
    POSSESSIVE = "possessive"
    CONJUNCTION = "conjunction"
    SUBORDINATOR = "subordinator"
    PREPOSITION = "preposition"  # a non-particle preposition with no wh-word to strand it


ARTICLES = frozenset({"a", "an", "the", "every"})
POSSESSIVES = frozenset({"my", "your", "our", "their", "its"})
CONJUNCTIONS = frozenset({"and", "or", "but", "nor"})
SUBORDINATORS = frozenset({"because", "if", "unless", "whether", "although", "whereas"})
# Prepositions with no use as an adverb or a phrasal-verb particle.
PREPOSITIONS = frozenset({
    "to", "for", "of", "with", "from", "at", "into", "onto", "as", "than", "until", "upon",
    "toward", "towards", "per", "via", "during", "among", "amongst", "despite", "except",
    "versus", "amid", "amidst", "unto",
})
# Wh-words that stand for a noun phrase, so they can leave a preposition stranded.
NOUN_WH = frozenset({"what", "who", "whom", "which", "whose", "whatever", "whoever", "whomever",
                     "whichever"})
# "where" stands for a place phrase that these three take ("where are you from").
WHERE_STRANDS = frozenset({"to", "from", "at"})
# How likely the left-out words that would leave the person mid-thought must be, together,
# for the pause to be read so. Chosen on bench/turn_completion's tuning clips, the lowest of
# 0.02-0.2 at which no more finished turns were held (docs/hearing.md).
LEFT_OUT_WEIGHT = 0.02
_FILLER = re.compile(r"(?:u+h+m*|u+m+|e+r+m*|e+h+m+|h+m+)")
# A mark after the last word that says more follows: , ; : - – — … or "..."
_OPEN_MARK = re.compile(r"(?:[,;:\-\u2013\u2014\u2026]|\.\.)\s*$")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
_CLOSING = " \t\r\n\"')]}»”’"


@dataclass(frozen=True, slots=True)
class TextReading:
    """What :func:`read_text` found: ``unfinished`` is ``None`` when the words could end a
    turn; ``last_word`` is the last word written (``""`` when there were none);
    ``left_out`` is the word the recognizer weighed and left out that made the reading
    mid-thought (``""`` when the written words did)."""

    unfinished: Unfinished | None
    last_word: str
    left_out: str = ""

    @property
    def mid_thought(self) -> bool:
        return self.unfinished is not None


def words_of(text: str) -> list[str]:
    """Lower-case words, apostrophes kept inside them ("what's")."""
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def read_text(text: str, end_mark: str = "", next_words: Sequence[tuple[str, float]] = ()) -> TextReading:
    """Read a transcript: written text (``"Set a timer for, um,"``) or normalised words
    (``"set a timer for um"``, with the engine's ``end_mark`` beside it), and the words the
    engine weighed writing next when it stopped, with their probabilities."""
    written = _read_written(text, end_mark)
    if written.mid_thought or not written.last_word or not next_words:
        return written
    left_out = [(probability, reading) for word, probability in next_words
                if (reading := _read_written(f"{text} {word}")).mid_thought]
    if sum(probability for probability, _ in left_out) < LEFT_OUT_WEIGHT:
        return written
    likeliest = max(left_out, key=lambda weighed: weighed[0])[1]
    return TextReading(likeliest.unfinished, written.last_word, likeliest.last_word)


def _read_written(text: str, end_mark: str = "") -> TextReading:
    words = words_of(text)
    last = words[-1] if words else ""
    if not words:
        return TextReading(None, last)
    written = text.rstrip(_CLOSING)
    if _OPEN_MARK.search(written) or _OPEN_MARK.search(end_mark.strip()):
        return TextReading(Unfinished.MARK, last)
    if _FILLER.fullmatch(last):
        return TextReading(Unfinished.FILLER, last)
    if last in ARTICLES:
        return TextReading(Unfinished.ARTICLE, last)
    if last in POSSESSIVES:
        return TextReading(Unfinished.POSSESSIVE, last)
    if last in CONJUNCTIONS:
        return TextReading(Unfinished.CONJUNCTION, last)
    if last in SUBORDINATORS:
        return TextReading(Unfinished.SUBORDINATOR, last)
    if last in PREPOSITIONS and not _stranding_possible(words[:-1], last):
        return TextReading(Unfinished.PREPOSITION, last)
    return TextReading(None, last)


def unfinished_by(text: str, end_mark: str = "", next_words: Sequence[tuple[str, float]] = ()
                  ) -> Unfinished | None:
    """Why the person is mid-thought, or ``None`` when the words could end the turn."""
    return read_text(text, end_mark, next_words).unfinished


def mid_thought(text: str, end_mark: str = "", next_words: Sequence[tuple[str, float]] = ()) -> bool:
    """True when the words so far cannot end an English turn."""
    return read_text(text, end_mark, next_words).mid_thought


def _stranding_possible(before: list[str], preposition: str) -> bool:
    """A wh-word that stands for the preposition's object came before it."""
    for word in before:
        head = word.split("'", 1)[0]  # "what's" -> "what"
        if head in NOUN_WH or (head == "where" and preposition in WHERE_STRANDS):
            return True
    return False
