"""BERT's uncased WordPiece tokenizer in pure Python, for the re-ranker (rerank.py).

The cross-encoder's ``vocab.txt`` is all it needs: the ``tokenizers`` package (a Rust
wheel) would be one more dependency for the ~2 000 characters a turn tokenizes. The
steps are BERT's "basic" tokenizer (clean, lower-case, strip accents, split at
whitespace and punctuation) and then greedy longest-match WordPiece with ``##``
continuations, as ``BertTokenizer(do_lower_case=True)`` does.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

MAX_WORD_CHARS = 100  # BERT's max_input_chars_per_word: longer words are [UNK]


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # BERT counts every non-alphanumeric ASCII character as punctuation ("$", "^", "`").
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
            or 0x2A700 <= code <= 0x2B73F or 0x2B740 <= code <= 0x2B81F or 0x2B820 <= code <= 0x2CEAF
            or 0xF900 <= code <= 0xFAFF or 0x2F800 <= code <= 0x2FA1F)


def basic_tokens(text: str) -> list[str]:
    """Lower-cased, accent-stripped words and punctuation marks, one a token."""
    cleaned = []
    for char in text:
        code = ord(char)
        if code in (0, 0xFFFD) or (unicodedata.category(char).startswith("C") and char not in "\t\n\r"):
            continue
        if char.isspace():
            cleaned.append(" ")
        elif _is_cjk(code):
            cleaned.append(f" {char} ")
        else:
            cleaned.append(char)
    tokens: list[str] = []
    for spaced in "".join(cleaned).lower().split():
        word = "".join(c for c in unicodedata.normalize("NFD", spaced) if unicodedata.category(c) != "Mn")
        current = ""
        for char in word:
            if _is_punctuation(char):
                if current:
                    tokens.append(current)
                    current = ""
                tokens.append(char)
            else:
                current += char
        if current:
            tokens.append(current)
    return tokens


@dataclass(frozen=True, slots=True)
class Encoded:
    """One (question, passage) pair as the model's three inputs."""

    input_ids: list[int]
    token_type_ids: list[int]


class WordPiece:
    """``vocab.txt`` (one token a line, the line number is its id) and the encoding."""

    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab
        self.cls, self.sep, self.unk = vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"]
        self.pad = vocab.get("[PAD]", 0)

    @classmethod
    def from_file(cls, path: Path) -> WordPiece:
        lines = path.read_text(encoding="utf-8").splitlines()
        return cls({token: number for number, token in enumerate(lines) if token})

    def ids(self, text: str) -> list[int]:
        out: list[int] = []
        for word in basic_tokens(text):
            if len(word) > MAX_WORD_CHARS:
                out.append(self.unk)
                continue
            pieces: list[int] = []
            start = 0
            while start < len(word):
                end = len(word)
                found = None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    found = self.vocab.get(piece)
                    if found is not None:
                        break
                    end -= 1
                if found is None:
                    pieces = [self.unk]  # BERT: a word with an unknown piece is one [UNK]
                    break
                pieces.append(found)
                start = end
            out += pieces
        return out

    def encode_pair(self, first: str, second: str, max_length: int) -> Encoded:
        """``[CLS] first [SEP] second [SEP]``, the longer side cut first (longest_first)."""
        a, b = self.ids(first), self.ids(second)
        budget = max_length - 3
        while len(a) + len(b) > budget:
            if len(a) > len(b):
                a.pop()
            else:
                b.pop()
        ids = [self.cls, *a, self.sep, *b, self.sep]
        types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        return Encoded(ids, types)
