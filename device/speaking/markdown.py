"""Markdown to speakable text, sentence by sentence, for a streamed reply.

Agents are asked for plain words, but some answer in markdown. What is done:

- emphasis (``**bold**``, ``*it*``, ``_it_``, ``~~strike~~``), headings (``#``),
  block quotes (``>``), bullets (``-``, ``*``, ``+``, ``•``): the markers go, the
  words stay. Numbered list markers stay (``1.`` is read "one").
- links ``[text](url)`` and images ``![alt](url)``: the text (alt text) is kept.
- bare URLs are never spelled out: they are read as their domain,
  ``https://www.example.com/a?b`` -> "example dot com".
- inline code: a short span that reads as a word or command (``ls``,
  ``config.toml``; up to 24 characters, at most 3 words) is kept without its
  backticks; a longer span is dropped (code is not read aloud).
- code fences: the whole block is skipped silently (nothing is said for it; a
  voice user cannot act on code, and a stock phrase after every fence grated).
- tables: the separator row goes; each row is read as its cells joined by commas.
- horizontal rules and HTML tags go.

Streaming: :class:`SpeakableSplitter` wraps the :class:`SentenceSplitter`, so a
marker split across deltas (``*`` then ``*bold**``) is only looked at once the
whole sentence is there; code-fence state carries from sentence to sentence
(fences are on their own lines, and a line break always ends a sentence).
"""

from __future__ import annotations

import re

from edgevoice.device.speaking.sentences import SentenceSplitter

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s*#{1,6}\s*")
_QUOTE = re.compile(r"^\s*(>\s*)+")
_BULLET = re.compile(r"^\s*([-*+•·▪]\s+)")
_RULE = re.compile(r"^\s*([-*_]\s*){3,}$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_LINK_TAIL = re.compile(r"\]\([^)]*\)")  # the rest of a link whose text held a sentence end
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_URL = re.compile(r"\b(?:https?://|ftp://|www\.)[^\s<>()\[\]]+", re.IGNORECASE)
_INLINE_CODE = re.compile(r"`+([^`]*)`+")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_EMPHASIS = re.compile(r"(\*{1,3}|_{1,3}|~~)(?=\S)(.+?)(?<=\S)\1")
_STRAY_MARKERS = re.compile(r"(?<![\w*])[*_~]+|[*_~]+(?![\w*])")
_SPACES = re.compile(r"[ \t]+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?])")
_SPOKEN_CODE = re.compile(r"^[\w.\-/ ]{1,24}$")


def url_to_speech(url: str) -> str:
    """``https://www.example.com/path`` -> ``example dot com``."""
    host = re.sub(r"^(?:https?|ftp)://", "", url, flags=re.IGNORECASE)
    host = re.split(r"[/?#:]", host, maxsplit=1)[0]
    host = re.sub(r"^www\.", "", host, flags=re.IGNORECASE).rstrip(".")
    trailing = url[len(url.rstrip(".,;:!?")) :]
    return " dot ".join(part for part in host.split(".") if part) + trailing


def _inline_code(match: re.Match[str]) -> str:
    content = match.group(1).strip()
    if _SPOKEN_CODE.match(content) and len(content.split()) <= 3:
        return content
    return ""


def _table_row(line: str) -> str:
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return ", ".join(cell for cell in cells if cell)


class SpeakableFilter:
    """Turns the sentences of one reply into speakable text; keeps code-fence state."""

    def __init__(self) -> None:
        self.in_fence = False

    def __call__(self, sentence: str) -> str:
        """The speakable form of ``sentence``; empty when nothing of it is spoken."""
        if _FENCE.match(sentence):
            self.in_fence = not self.in_fence
            return ""
        if self.in_fence:
            return ""
        text = sentence.strip()
        if _RULE.match(text) or _TABLE_SEPARATOR.match(text):
            return ""
        if text.startswith("|") and text.count("|") >= 2:
            text = _table_row(text)
        text = _HEADING.sub("", text)
        text = _QUOTE.sub("", text)
        text = _BULLET.sub("", text)
        text = _INLINE_CODE.sub(_inline_code, text)
        text = _IMAGE.sub(r"\1", text)
        text = _LINK.sub(r"\1", text)
        text = _REF_LINK.sub(r"\1", text)
        text = _LINK_TAIL.sub("", text)
        text = _URL.sub(lambda m: url_to_speech(m.group(0)), text)
        text = _HTML_TAG.sub(" ", text)
        for _ in range(3):  # nested emphasis: ***x***, **_x_**
            text = _EMPHASIS.sub(r"\2", text)
        text = _STRAY_MARKERS.sub("", text)
        text = text.replace("[", "").replace("]", "").replace("`", "")
        text = _SPACES.sub(" ", text).strip()
        text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
        return text if any(ch.isalnum() for ch in text) else ""


def speakable(text: str) -> list[str]:
    """A whole markdown text as speakable sentences."""
    splitter = SpeakableSplitter()
    return splitter.feed(text) + splitter.flush()


class SpeakableSplitter:
    """A :class:`SentenceSplitter` whose sentences come out speakable (same API)."""

    def __init__(self, max_first_chars: int = 60, max_chars: int = 300, first_phrase_chars: int = 0,
                 *, first_wait_ms: float = 0.0, first_cut_words: int = 4, follow_growth: float = 0.0,
                 min_follow_chars: int = 40) -> None:
        self.splitter = SentenceSplitter(max_first_chars, max_chars, first_phrase_chars,
                                         first_wait_ms=first_wait_ms, first_cut_words=first_cut_words,
                                         follow_growth=follow_growth, min_follow_chars=min_follow_chars)
        self.filter = SpeakableFilter()

    @property
    def emitted(self) -> int:
        """Pieces the splitter emitted so far (before the speakable filter)."""
        return self.splitter.emitted

    @property
    def pending(self) -> str:
        return self.splitter.pending

    def feed(self, delta: str) -> list[str]:
        return self._speak(self.splitter.feed(delta))

    def waited(self, waited_ms: float) -> list[str]:
        """See :meth:`SentenceSplitter.waited`."""
        return self._speak(self.splitter.waited(waited_ms))

    def flush(self) -> list[str]:
        return self._speak(self.splitter.flush())

    def _speak(self, sentences: list[str]) -> list[str]:
        out = []
        for sentence in sentences:
            text = self.filter(sentence)
            if text:
                out.append(text)
        return out
