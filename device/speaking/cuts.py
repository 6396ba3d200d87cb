"""Where a sentence may be cut into spoken pieces without breaking a token (pure).

The sentence splitter cuts a long or slow first sentence early (at a clause mark,
before a connective, or at a word boundary after a wait) and sizes the pieces after
it. A cut must never fall inside something that is read as one unit:

- a number or an amount: ``3,500``, ``3 500``, ``$5 million``, ``twenty five``,
  ``one hundred and twenty``, ``between 3 and 5``;
- a time: ``10:30 a.m.``, ``7 pm``, ``5 o'clock``;
- a date: ``March 5, 2024``, ``5 March``, ``Jan. 5``;
- an abbreviation and what it precedes: ``Dr. Smith``, ``e.g. this``, ``J. R. R.``;
- a code or a label and its number: ``BA 117``, ``M25 4``, ``flight 117``, ``gate 5``;
- a URL-like token or inline markup: ``example.com/a,b``, ``[link text](url)``,
  ```` `ls -la` ````, ``**bold words**``.

URL-like tokens hold no spaces, and every cut is at a space or after a clause mark
followed by a space, so they are never split; the rest is judged from the word on each
side of the space (:func:`safe_space`) and from the markup still open before it
(:func:`markup_open`). Word cuts also avoid the place right after a function word
("the | weather"), which would sound broken.
"""

from __future__ import annotations

# Words a spoken phrase can start with: cutting just before one keeps the prosody
# natural ("It is sunny today | with a high of twenty degrees").
CONNECTIVES = frozenset(
    {
        "and", "but", "or", "so", "because", "which", "while", "when", "where", "with",
        "although", "though", "since", "unless", "until", "whereas", "whether", "then",
        "if", "that", "who",
    }
)

_MONTHS = frozenset(
    {
        "january", "february", "march", "april", "may", "june", "july", "august", "september",
        "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
        "sep", "sept", "oct", "nov", "dec",
    }
)
_NUMBER_WORDS = frozenset(
    {
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy",
        "eighty", "ninety", "hundred", "thousand", "million", "billion", "trillion", "half",
        "quarter", "point", "dozen",
    }
)
# Words that belong to the number before them.
_AFTER_NUMBER = frozenset(
    {
        "am", "pm", "a.m", "p.m", "o'clock", "o’clock", "percent", "%", "degrees", "°", "°c",
        "°f", "km", "m", "cm", "mm", "kg", "g", "mg", "lb", "lbs", "oz", "ft", "in", "mph",
        "kph", "km/h", "h", "hrs", "min", "mins", "s", "sec", "ms", "kb", "mb", "gb", "tb",
        "and", "to", "or", "point", "st", "nd", "rd", "th", "x", "by", "of",
        *_NUMBER_WORDS,
    }
)
# Abbreviations that always go on to the next word.
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "e.g", "i.e", "cf",
        "viz", "fig", "approx", "dept", "gen", "gov", "sen", "rep", "rev", "capt", "lt",
        "col", "sgt", "messrs", "mme", "mlle", "no", "etc", "inc", "ltd", "co", "corp", "est",
        "u.s", "u.k", "a.m", "p.m", "ph.d", "vol", "ch", "p", "pp",
    }
)
# Nouns that name the number after them ("flight | 117" reads as two answers).
_LABELS = frozenset(
    {
        "flight", "gate", "room", "platform", "bus", "route", "line", "track", "terminal", "floor",
        "level", "page", "chapter", "step", "exit", "suite", "unit", "apartment", "flat", "number",
        "channel", "table", "seat", "row", "train", "order", "ticket", "case", "version", "model",
    }
)
_SYMBOLS = frozenset({"$", "€", "£", "¥", "#", "№", "+", "-", "±", "~", "≈", "@", "&", "=", "/"})
# After these a cut sounds broken ("the | weather").
_FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "of", "to", "in", "on", "at", "for", "by", "from", "as", "into",
        "my", "your", "our", "their", "his", "her", "its", "this", "these", "those",
        "very", "more", "most", "not", "no", "than", "i", "we", "you", "he", "she", "they",
        "it's", "i'm", "is", "are", "was", "be", *CONNECTIVES,
    }
)
_EDGE = "\"'“”‘’«»()[]{}*_`,;:.!?…"


def _core(word: str) -> str:
    return word.strip(_EDGE).lower()


def _numeric(word: str) -> bool:
    core = _core(word)
    return any(c.isdigit() for c in word) or core in _NUMBER_WORDS


def _abbreviation(word: str) -> bool:
    """``Dr.``, ``e.g.``, ``U.S.``, ``J.``: a dotted word that goes on to the next."""
    bare = word.lstrip(_EDGE.replace(".", ""))
    if not bare.endswith("."):
        return False
    stem = bare.rstrip(".").lower()
    if stem in _ABBREVIATIONS or stem.replace(".", "") in {a.replace(".", "") for a in _ABBREVIATIONS}:
        return True
    if len(stem) == 1 and stem.isalpha():
        return True  # an initial
    parts = stem.split(".")
    return len(parts) >= 2 and all(part.isalpha() and len(part) <= 2 for part in parts)


def _code(word: str) -> bool:
    """``BA``, ``UA``, ``M25``, ``A4``: capitals (and digits) that name what follows."""
    bare = word.strip(_EDGE)
    return 2 <= len(bare) <= 5 and bare.isalnum() and bare.isupper()


def safe_space(before: str, after: str) -> bool:
    """Whether a piece may end after the word ``before`` and the next start at ``after``
    (both whole words, as they stand in the text, punctuation attached)."""
    if not before or not after:
        return True
    b, a = _core(before), _core(after)
    if _abbreviation(before):
        return False  # Dr. | Smith, e.g. | this
    if before.strip(_EDGE) in _SYMBOLS or after.strip(_EDGE) in _SYMBOLS:
        return False  # $ | 5, 5 | %
    if _numeric(before) and (_numeric(after) or a in _AFTER_NUMBER or a in _MONTHS):
        return False  # 3 500, 10:30 a.m., five | thousand, 5 | March, 3 | and 5
    if b in _MONTHS and _numeric(after):
        return False  # March | 5
    if after[:1].isdigit() and (b in _LABELS or _code(before)):
        return False  # BA | 117, flight | 117, the number | 14 bus
    if a in _NUMBER_WORDS and b in {"and", "point"}:
        return False  # one hundred and | twenty
    return not (before[-1:].isalnum() and after[:1] in "%°")


def word_cut_ok(before: str, after: str) -> bool:
    """A word-boundary cut (no punctuation there): safe, and not right after a function
    word, which would leave the piece hanging ("the | weather")."""
    return safe_space(before, after) and _core(before) not in _FUNCTION_WORDS


def markup_open(text: str) -> bool:
    """Whether a link, a bracket, inline code or emphasis is still open at the end of
    ``text``: a cut there would split the markup the speakable filter removes."""
    if text.count("`") % 2 or text.count("**") % 2 or text.count("~~") % 2:
        return True
    if text.count("[") > text.count("]"):
        return True
    return text.rfind("](") > text.rfind(")")  # inside a link's address


def markup_states(text: str) -> list[bool]:
    """``markup_open(text[:q])`` for every ``q`` in ``0..len(text)``, in one pass."""
    states = [False]
    ticks = stars = tildes = opened = closed = 0
    link_at = paren_at = -1
    i = 0
    pending: dict[int, str] = {}  # a two-character marker counts once both are in
    for q in range(1, len(text) + 1):
        ch = text[q - 1]
        if q - 1 >= i:
            pair = text[q - 1 : q + 1]
            if pair in ("**", "~~"):
                pending[q + 1] = pair
                i = q + 1
        marker = pending.pop(q, None)
        if marker == "**":
            stars += 1
        elif marker == "~~":
            tildes += 1
        if ch == "`":
            ticks += 1
        elif ch == "[":
            opened += 1
        elif ch == "]":
            closed += 1
        elif ch == "(" and q >= 2 and text[q - 2] == "]":
            link_at = q - 2
        elif ch == ")":
            paren_at = q - 1
        states.append(bool(ticks % 2 or stars % 2 or tildes % 2 or opened > closed
                           or link_at > paren_at))
    return states
