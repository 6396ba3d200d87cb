"""Comparing transcripts: word-level edit distance for the hearing and barge-in benches."""

from __future__ import annotations


def edit_distance(a: list[str], b: list[str]) -> int:
    """Word substitutions, insertions and deletions that turn ``a`` into ``b``."""
    row = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, wb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (wa != wb))
    return row[-1]
