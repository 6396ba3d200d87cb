"""Knowledge files cut into chunks (pure: text in, chunks out).

Three kinds of file:

- **Markdown** (``.md``): cut at headings, then at paragraphs; consecutive paragraphs
  of one section are joined up to ``chunk_chars``; a longer paragraph is cut between
  sentences. Each chunk keeps its heading path ("Visiting > Tickets") as context.
- **Plain text** (``.txt``): paragraphs, joined the same way; the file's name is the
  heading.
- **Q/A TOML** (``.toml``): ``title = "..."`` and ``[[entry]]`` tables with
  ``question`` (a string or a list of phrasings), ``answer``, and optional ``id``,
  ``section`` and ``keywords``. One entry is one chunk, never cut.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from edgevoice.device.knowledge.errors import KnowledgeSourceError

SUFFIXES = (".md", ".markdown", ".txt", ".toml")

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_SLUG = re.compile(r"[^a-z0-9]+")


class ChunkKind(StrEnum):
    QA = "qa"
    PROSE = "prose"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable piece of knowledge."""

    key: str  # stable label: "<file stem>#<entry id or heading slug>[-n]"
    kind: ChunkKind
    heading: str  # heading path, or the Q/A file's title and section
    question: str  # Q/A: every phrasing, one per line; prose: ""
    body: str  # Q/A: the answer; prose: the text
    keywords: str = ""

    def as_context(self) -> str:
        """The chunk as one string for an agent's ``context``."""
        if self.kind is ChunkKind.QA:
            first = self.question.split("\n", 1)[0]
            return f"[{self.heading}] Q: {first} A: {self.body}"
        return f"[{self.heading}] {self.body}" if self.heading else self.body


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-") or "section"


def chunk_file(path: Path, text: str, chunk_chars: int) -> tuple[str, list[Chunk]]:
    """The title and the chunks of one file's text; raises ``KnowledgeSourceError``."""
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return chunk_qa_toml(path, text)
    if suffix in (".md", ".markdown"):
        return chunk_markdown(path.stem, text, chunk_chars)
    if suffix == ".txt":
        return chunk_plain(path.stem, text, chunk_chars)
    raise KnowledgeSourceError(
        f"{path}: knowledge files must be Markdown (.md), plain text (.txt) or Q/A TOML (.toml)"
    )


def chunk_qa_toml(path: Path, text: str) -> tuple[str, list[Chunk]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise KnowledgeSourceError(f"{path}: not valid TOML ({err}); fix the file") from err
    title = data.get("title", path.stem)
    entries = data.get("entry", [])
    if not isinstance(title, str) or not isinstance(entries, list):
        raise KnowledgeSourceError(
            f"{path}: a Q/A file has title = \"...\" and [[entry]] tables with question and answer"
        )
    chunks: list[Chunk] = []
    seen: set[str] = set()
    for number, entry in enumerate(entries, 1):
        where = f"{path}: entry {number}"
        if not isinstance(entry, dict):
            raise KnowledgeSourceError(f"{where} is not a table; write it as [[entry]]")
        questions = entry.get("question")
        if isinstance(questions, str):
            questions = [questions]
        answer = entry.get("answer")
        if (not isinstance(questions, list) or not questions
                or not all(isinstance(q, str) and q.strip() for q in questions)):
            raise KnowledgeSourceError(f"{where} needs question = \"...\" (or a list of phrasings)")
        if not isinstance(answer, str) or not answer.strip():
            raise KnowledgeSourceError(f"{where} needs answer = \"...\"")
        keywords = entry.get("keywords", [])
        if isinstance(keywords, str):
            keywords = [keywords]
        if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
            raise KnowledgeSourceError(f"{where}: keywords must be a list of strings")
        section = entry.get("section", "")
        if not isinstance(section, str):
            raise KnowledgeSourceError(f"{where}: section must be a string")
        ident = entry.get("id") or slug(questions[0])[:48]
        if not isinstance(ident, str):
            raise KnowledgeSourceError(f"{where}: id must be a string")
        if ident in seen:
            raise KnowledgeSourceError(f"{where}: id {ident!r} is used twice; ids must be unique")
        seen.add(ident)
        heading = f"{title} > {section}" if section else title
        chunks.append(Chunk(
            key=f"{path.stem}#{ident}", kind=ChunkKind.QA, heading=heading,
            question="\n".join(q.strip() for q in questions), body=" ".join(answer.split()),
            keywords=" ".join(keywords),
        ))
    return title, chunks


def chunk_markdown(stem: str, text: str, chunk_chars: int) -> tuple[str, list[Chunk]]:
    title = ""
    path: list[str] = []
    sections: list[tuple[list[str], list[str]]] = []  # (heading path, paragraphs)
    paragraph: list[str] = []
    current: tuple[list[str], list[str]] = ([], [])
    in_fence = False

    def end_paragraph() -> None:
        if paragraph:
            current[1].append(" ".join(paragraph))
            paragraph.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            end_paragraph()
            continue
        if in_fence:
            continue
        match = _HEADING.match(stripped)
        if match:
            end_paragraph()
            if current[1]:
                sections.append(current)
            level = len(match.group(1))
            name = match.group(2).strip()
            if level == 1 and not title:
                title = name
            path = path[: level - 1] + [name]
            current = (list(path), [])
            continue
        if not stripped:
            end_paragraph()
            continue
        paragraph.append(stripped)
    end_paragraph()
    if current[1]:
        sections.append(current)
    title = title or stem
    chunks: list[Chunk] = []
    used: dict[str, int] = {}
    for heading_path, paragraphs in sections:
        heading = " > ".join(heading_path) or title
        base = f"{stem}#{slug(heading_path[-1]) if heading_path else 'intro'}"
        for body in pack(paragraphs, chunk_chars):
            count = used.get(base, 0)
            used[base] = count + 1
            key = base if count == 0 else f"{base}-{count + 1}"
            chunks.append(Chunk(key=key, kind=ChunkKind.PROSE, heading=heading, question="", body=body))
    return title, chunks


def chunk_plain(stem: str, text: str, chunk_chars: int) -> tuple[str, list[Chunk]]:
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    title = stem.replace("_", " ").replace("-", " ")
    return title, [
        Chunk(key=f"{stem}#p{n}", kind=ChunkKind.PROSE, heading=title, question="", body=body)
        for n, body in enumerate(pack(paragraphs, chunk_chars), 1)
    ]


def pack(paragraphs: list[str], chunk_chars: int) -> list[str]:
    """Paragraphs joined up to ``chunk_chars``; a longer one is cut between sentences."""
    pieces: list[str] = []
    for paragraph in paragraphs:
        if len(paragraph) <= chunk_chars:
            pieces.append(paragraph)
            continue
        piece = ""
        for sentence in _SENTENCE_END.split(paragraph):
            if piece and len(piece) + 1 + len(sentence) > chunk_chars:
                pieces.append(piece)
                piece = sentence
            else:
                piece = f"{piece} {sentence}" if piece else sentence
        if piece:
            pieces.append(piece)
    out: list[str] = []
    for piece in pieces:
        if out and len(out[-1]) + 1 + len(piece) <= chunk_chars:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


@dataclass(frozen=True, slots=True)
class Candidate:
    """One chunk the FTS query found, with its BM25 score (higher is better)."""

    rowid: int
    bm25: float
    key: str
    kind: ChunkKind
    path: str
    heading: str
    question: str
    body: str
    terms: frozenset[str]
    phrasings: tuple[frozenset[str], ...]  # Q/A: the content terms of each question phrasing
