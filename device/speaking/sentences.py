"""Incremental sentence splitter: text deltas in, sentences out the moment their end is certain.

An agent's reply streams in as small text deltas. To start speaking early, each
sentence goes to TTS as soon as nothing that arrives later could change where it
ends: a terminator (``. ! ? …``) followed by whitespace, a CJK full stop (``。！？``,
which need no space), a line break, or the end of the stream.

What is *not* an end:

- abbreviations that precede a name or continue the sentence (``Dr.``, ``Mr.``,
  ``e.g.``, ``i.e.``, ``vs.``); dotted abbreviations and ``etc.`` (``U.S.``,
  ``a.m.``) end a sentence only when the next word starts with a capital letter;
- decimals, versions and times (``3.5``, ``2.0.1``, ``10:30``): no space follows;
- single-letter initials (``J. R. R. Tolkien``);
- list markers (``1. First``): a number that is the first token of its sentence;
- ellipses followed by a lower-case word (``well... maybe``).

Quotes, closing brackets and markdown emphasis after the terminator belong to the
sentence (``He said "Go." Then``). A long first sentence is cut at the first clause
boundary (comma, semicolon, colon, dash) after ``max_first_chars`` characters so the
first audio is not held back by a long sentence (piper synthesizes a whole piece
before any of it plays); a first sentence with no such boundary is cut before a
connective (``and``, ``but``, ``with``, ``because``…, English) once it is
``first_phrase_chars`` long; any sentence longer than ``max_chars`` is cut at its
last clause boundary (else its last space).

First words early (``first_wait_ms``, ``first_cut_words``): when the first piece has
found no clause mark or connective and the caller says (:meth:`SentenceSplitter.waited`)
that it has waited ``first_wait_ms`` since the reply's first text, the first piece is cut
at its last safe word boundary once it holds ``first_cut_words`` words. The pieces after
an early cut are sized so synthesis stays ahead of playback (``follow_growth``): each may
be at most that many times the characters already emitted (at least ``min_follow_chars``),
cut at its last clause mark, else before its last connective, else at its last safe word
boundary. No cut ever falls inside a number, a time, a date, an abbreviation, a URL or
markup (edgevoice.device.speaking.cuts).

Every decision at a position depends only on the text up to a short look-ahead,
and the splitter waits while that look-ahead has not arrived: the output is the
same however the text is chunked (one character at a time or all at once), and
with the same :meth:`~SentenceSplitter.waited` calls at the same places in the text.
Pure: no clock (the wait is a duration passed in), no I/O.
"""

from __future__ import annotations

from edgevoice.device.speaking.cuts import CONNECTIVES, markup_open, markup_states, safe_space, word_cut_ok

_TERMINATORS = frozenset(".!?…。！？．")
_CJK_TERMINATORS = frozenset("。！？．")
# Characters that may follow a terminator and still belong to its sentence.
_CLOSERS = frozenset("\"'”’»)]}*_`」』）】")
_OPENERS = "\"'“‘«([{*_`「『（【"
_CLAUSE_MARKS = frozenset(",;:")
_EMPHASIS_CLOSE = "**"
_CJK_CLAUSE_MARKS = frozenset("，、；：")
_DASHES = frozenset("—–")

# Abbreviations after which a sentence never ends (they precede a name or go on).
_NEVER_END = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "e.g", "i.e", "cf",
        "viz", "fig", "approx", "dept", "gen", "gov", "sen", "rep", "rev", "capt", "lt",
        "col", "sgt", "messrs", "mme", "mlle", "no",
    }
)
# Abbreviations that may end a sentence: they do when the next word is capitalised.
_MAYBE_END = frozenset({"etc", "inc", "ltd", "co", "corp", "jan", "feb", "aug", "sept", "oct",
                        "nov", "dec", "est", "min", "max", "hrs", "ft", "oz", "lb"})

_MONTH_ABBREVIATIONS = frozenset({"jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
                                  "oct", "nov", "dec"})

_WAIT = -1  # a decision needs text that has not arrived yet


class SentenceSplitter:
    """Feed text deltas with :meth:`feed`; call :meth:`flush` at the end of the stream.

    One splitter per reply: ``max_first_chars`` applies to the first sentence it emits.
    ``first_wait_ms`` 0 never cuts on a wait; ``follow_growth`` 0 does not size the
    pieces after the first (only ``max_chars`` applies).
    """

    def __init__(self, max_first_chars: int = 60, max_chars: int = 300, first_phrase_chars: int = 0,
                 *, first_wait_ms: float = 0.0, first_cut_words: int = 4, follow_growth: float = 0.0,
                 min_follow_chars: int = 40) -> None:
        if max_first_chars < 1 or max_chars < 2 or first_phrase_chars < 0:
            raise ValueError("max_first_chars must be >= 1, max_chars >= 2 and first_phrase_chars >= 0")
        if first_wait_ms < 0 or first_cut_words < 1 or follow_growth < 0:
            raise ValueError("first_wait_ms and follow_growth must be >= 0 and first_cut_words >= 1")
        if min_follow_chars < 2:
            raise ValueError("min_follow_chars must be >= 2")
        self.max_first_chars = max_first_chars
        self.max_chars = max_chars
        self.first_phrase_chars = first_phrase_chars  # 0: no cut before a connective
        self.first_wait_ms = first_wait_ms
        self.first_cut_words = first_cut_words
        self.follow_growth = follow_growth
        self.min_follow_chars = min_follow_chars
        self._emitted_chars = 0
        self._buf = ""
        self._start = 0  # start of the current sentence in _buf
        self._scan = 0  # next position to examine
        self._emitted = 0

    @property
    def pending(self) -> str:
        """Text received but not yet emitted."""
        return self._buf[self._start :]

    @property
    def emitted(self) -> int:
        """Sentences emitted so far."""
        return self._emitted

    def feed(self, delta: str) -> list[str]:
        """Add a delta; return the sentences whose end is now certain."""
        if not delta:
            return []
        self._buf += delta
        return self._run(final=False)

    def waited(self, waited_ms: float) -> list[str]:
        """The caller says the reply's first text arrived ``waited_ms`` ago and nothing
        has been emitted: past ``first_wait_ms``, cut the first piece at its last safe
        word boundary (it needs ``first_cut_words`` words). Later calls do nothing."""
        if self._emitted or not self.first_wait_ms or waited_ms < self.first_wait_ms:
            return []
        cut = self._word_cut(len(self._buf), min_words=self.first_cut_words)
        if cut is None:
            return []
        out: list[str] = []
        self._emit(out, cut)
        self._scan = self._start  # judge the rest again as a following piece
        return out + self._run(final=False)

    def flush(self) -> list[str]:
        """End of stream: return every remaining sentence."""
        out = self._run(final=True)
        rest = self._buf[self._start :].strip()
        self._buf = ""
        self._start = self._scan = 0
        if rest:
            out.append(rest)
            self._emitted += 1
        return out

    # --- scanning -----------------------------------------------------------------------

    def _run(self, *, final: bool) -> list[str]:
        out: list[str] = []
        buf = self._buf
        p = self._scan
        while p < len(buf):
            # Skip whitespace at the start of a sentence.
            if self._start == p and buf[p].isspace():
                self._start = p = p + 1
                continue
            length = p - self._start
            limit = self._limit()
            if length >= limit:
                # max_chars is hard; a following piece's size limit gives way to a token
                # that has no safe cut (it is tried again at each space).
                hard = limit >= self.max_chars
                cut = self._forced_cut(p, hard=True) if hard else (
                    self._forced_cut(p, hard=False) if buf[p].isspace() else None)
                if cut is not None:
                    self._emit(out, cut)
                    p = self._start
                    continue
            found = self._end_at(p, final=final)
            if found == _WAIT:
                break
            if found is not None:
                self._emit(out, found)
                p = self._start
                continue
            if buf[p] in _TERMINATORS:
                # Not an end: skip the whole run ("...", "?!") so its tail is not re-judged.
                while p < len(buf) and buf[p] in _TERMINATORS:
                    p += 1
                continue
            p += 1
        self._scan = p
        # Keep the buffer short: drop what was emitted.
        if self._start > 0:
            self._buf = self._buf[self._start :]
            self._scan -= self._start
            self._start = 0
        return out

    def _emit(self, out: list[str], end: int) -> None:
        sentence = self._buf[self._start : end].strip()
        self._start = end
        if sentence:
            out.append(sentence)
            self._emitted += 1
            self._emitted_chars += len(sentence)

    def _limit(self) -> int:
        """The longest the current piece may grow before it is cut."""
        if not self.follow_growth or not self._emitted:
            return self.max_chars
        budget = max(self.min_follow_chars, int(self.follow_growth * self._emitted_chars))
        return min(self.max_chars, budget)

    def _end_at(self, p: int, *, final: bool) -> int | None:
        """Where the sentence ends if position ``p`` ends it; None if it does not;
        _WAIT if that depends on text not yet received."""
        buf = self._buf
        ch = buf[p]
        if ch == "\n":
            return p + 1
        if ch in _TERMINATORS:
            return self._terminator_end(p, final=final)
        if self._emitted == 0:
            length = p - self._start
            if length >= self.max_first_chars and (found := self._clause_end(p, final=final)) is not None:
                return found
            if self.first_phrase_chars and length >= self.first_phrase_chars and ch == " ":
                return self._connective_cut(p, final=final)
        return None

    def _terminator_end(self, p: int, *, final: bool) -> int | None:
        buf = self._buf
        j = p
        while j < len(buf) and buf[j] in _TERMINATORS:
            j += 1
        run = buf[p:j]
        while j < len(buf) and buf[j] in _CLOSERS:
            j += 1
        if j >= len(buf):
            return j if final else _WAIT
        if any(c in _CJK_TERMINATORS for c in run):
            return j
        if not buf[j].isspace():
            return None  # 3.5, U.S.A, e.g.x, "wait...what": not an end
        if "?" in run or "!" in run:
            return j
        if run in ("...", "…") or len(run) > 1 and set(run) <= {".", "…"}:
            return self._if_next_word_capital(j, final=final)
        word = self._word_before(p)
        lowered = word.lower()
        if lowered in _MONTH_ABBREVIATIONS:
            return self._if_next_word_capital(j, final=final, digit_goes_on=True)  # Jan. 5
        if lowered in _NEVER_END:
            return None
        if len(word) == 1 and word.isalpha() and word.isupper():
            return None  # an initial: J. Smith
        if word.isdigit() and self._is_first_token(p - len(word)):
            return None  # a list marker: "1. First"
        if lowered in _MAYBE_END or ("." in word and _is_dotted_abbreviation(word)):
            return self._if_next_word_capital(j, final=final)
        return j

    def _if_next_word_capital(self, j: int, *, final: bool, digit_goes_on: bool = False) -> int | None:
        buf = self._buf
        k = j
        while k < len(buf) and buf[k].isspace() and buf[k] != "\n":
            k += 1
        if k >= len(buf):
            return j if final else _WAIT
        nxt = buf[k]
        if nxt == "\n":
            return j
        if nxt.isalpha() and nxt.islower() or digit_goes_on and nxt.isdigit():
            return None
        return j

    def _clause_end(self, p: int, *, final: bool) -> int | None:
        """A clause boundary at ``p`` (for cutting a long first sentence)."""
        buf = self._buf
        ch = buf[p]
        if ch in _CJK_CLAUSE_MARKS:
            return p + 1
        is_mark = ch in _CLAUSE_MARKS or ch in _DASHES
        spaced_hyphen = ch == "-" and p > 0 and buf[p - 1] == " "
        if not (is_mark or spaced_hyphen):
            return None
        if p + 1 >= len(buf):
            return None if final else _WAIT
        if markup_open(buf[self._start : p]):
            return self._mark_closing_emphasis(p, final=final)  # else [Paris, France](url)
        if buf[p + 1].isspace():
            return self._safe_mark(p, final=final)
        if ch in _DASHES:
            return p + 1  # word—word
        return None  # 10:30, 3,500, well-known

    def _mark_closing_emphasis(self, p: int, *, final: bool) -> int | None:
        """``**Good news:** your …``: a clause mark that ends an emphasis (LLMs open replies
        so) is a cut after the closing ``**``, when that closes all the open markup and a
        space follows."""
        buf = self._buf
        end = p + 1 + len(_EMPHASIS_CLOSE)
        if not buf.startswith(_EMPHASIS_CLOSE, p + 1):
            partial = _EMPHASIS_CLOSE.startswith(buf[p + 1 :])  # "**" may still be arriving
            return _WAIT if partial and not final else None
        if markup_open(buf[self._start : end]):
            return None
        if end >= len(buf):
            return None if final else _WAIT
        if not buf[end].isspace():
            return None
        after = self._word_at(end, final=final)
        if _mark_ok(self._word_before(p + 1), after):
            return end
        return _WAIT if after is None else None

    def _safe_mark(self, p: int, *, final: bool) -> int | None:
        """A clause mark at ``p`` followed by a space: a cut unless it is inside a date or
        a number (March 5, 2024; 1, 500), which needs the next word."""
        after = self._word_at(p + 1, final=final)
        if _mark_ok(self._word_before(p + 1), after):
            return p + 1
        return _WAIT if after is None else None

    def _connective_cut(self, p: int, *, final: bool) -> int | None:
        """Cut at the space ``p`` when the word after it is a connective."""
        buf = self._buf
        k = p + 1
        while k < len(buf) and buf[k].isalpha():
            k += 1
        if k >= len(buf):
            return None if final else _WAIT  # the word may go on
        if buf[p + 1:k].lower() not in CONNECTIVES or markup_open(buf[self._start : p]):
            return None
        return p if safe_space(self._word_before(p), buf[p + 1:k]) else None

    def _forced_cut(self, p: int, *, hard: bool) -> int | None:
        """Cut a piece that reached its limit at ``p``: at its last clause boundary, else
        before its last connective, else at its last safe word boundary; when ``hard``,
        else its last space, else right here (None: no safe cut). Judged on the text
        before ``p`` only."""
        buf = self._buf
        lo = self._start + 1
        opened = markup_states(buf[self._start : p])  # opened[q - start]: markup open before q
        for q in range(p - 1, lo - 1, -1):
            c = buf[q]
            if opened[q - self._start]:
                continue
            is_mark = (c in _CLAUSE_MARKS and buf[q + 1].isspace()) or c in _CJK_CLAUSE_MARKS or c in _DASHES
            if is_mark and _mark_ok(self._word_before(q + 1), self._word_at(q + 1, end=p)):
                return q + 1
        for q in range(p - 1, lo - 1, -1):
            after = self._word_at(q, end=p) if buf[q].isspace() else None
            if after and after.lower().rstrip(",;:") in CONNECTIVES and not opened[q - self._start] \
                    and safe_space(self._word_before(q), after):
                return q
        cut = self._word_cut(p, min_words=1)
        if cut is not None or not hard:
            return cut
        for q in range(p - 1, lo - 1, -1):
            if buf[q].isspace():
                return q
        return p

    def _word_cut(self, end: int, *, min_words: int) -> int | None:
        """The last space before ``end`` where a word cut is safe, with at least
        ``min_words`` words before it and a whole word after it (judged on text before
        ``end``); None if there is none."""
        buf = self._buf
        opened = markup_states(buf[self._start : end])
        for q in range(end - 1, self._start, -1):
            if not buf[q].isspace() or buf[q - 1].isspace():
                continue
            after = self._word_at(q, end=end)
            if not after:
                continue
            if len(buf[self._start : q].split()) < min_words:
                return None
            if buf[q] == "\n" or opened[q - self._start]:
                continue
            if word_cut_ok(self._word_before(q), after):
                return q
        return None

    def _word_at(self, q: int, end: int | None = None, *, final: bool = False) -> str | None:
        """The whole word after the whitespace at ``q`` ("" if none follows at once);
        None when it may go on past ``end`` (default: the text received; at the end of
        the stream nothing goes on)."""
        buf = self._buf
        limit = len(buf) if end is None else end
        k = q
        while k < limit and buf[k].isspace() and buf[k] != "\n":
            k += 1
        if k >= limit:
            return "" if final else None
        if buf[k] == "\n":
            return ""
        m = k
        while m < limit and not buf[m].isspace():
            m += 1
        return buf[k:m] if m < limit or final else None

    def _word_before(self, p: int) -> str:
        buf = self._buf
        k = p
        while k > self._start and not buf[k - 1].isspace():
            k -= 1
        return buf[k:p].lstrip(_OPENERS)

    def _is_first_token(self, word_start: int) -> bool:
        buf = self._buf
        k = word_start
        while k > self._start and buf[k - 1] in _OPENERS:
            k -= 1
        return not buf[self._start : k].strip()


def _mark_ok(before: str, after: str | None) -> bool:
    """A cut after the clause mark that ends ``before``, with ``after`` the next word
    (None: not known yet): not inside a number or a date (``March 5, 2024``, ``1, 500``)."""
    if not any(c.isdigit() for c in before):
        return True
    return after is not None and (not after or safe_space(before, after))


def _is_dotted_abbreviation(word: str) -> bool:
    """U.S, a.m, p.m, Ph.D: short letter groups joined by dots."""
    parts = word.split(".")
    return len(parts) >= 2 and all(part.isalpha() and len(part) <= 2 for part in parts)


def split_sentences(text: str, max_first_chars: int = 60, max_chars: int = 300,
                    first_phrase_chars: int = 0, *, follow_growth: float = 0.0) -> list[str]:
    """Split a whole text at once (the same result as streaming it)."""
    splitter = SentenceSplitter(max_first_chars, max_chars, first_phrase_chars,
                                follow_growth=follow_growth)
    return splitter.feed(text) + splitter.flush()
