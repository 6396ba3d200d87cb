"""The docs say which models are pinned, and claim no more and no less than the shipped
manifest does: a pin added or dropped without the docs fails here."""

from __future__ import annotations

import re
from pathlib import Path

from edgevoice.models.manifest import shipped_manifest

ROOT = Path(__file__).resolve().parents[2]


def pinned_section() -> str:
    text = (ROOT / "docs" / "models.md").read_text()
    start = text.index("### Which hashes are pinned")
    end = text.index("\n#", start + 1)
    return text[start:end]


def test_every_pinned_model_and_only_those_are_marked_pinned_in_docs_models() -> None:
    manifest = shipped_manifest()
    pinned = {e.name for e in manifest.entries if e.sources and all(s.sha256 for s in e.sources)}
    assert pinned, "the shipped manifest pins at least Moonshine"
    rows = [line for line in pinned_section().splitlines() if line.startswith("| `")]
    # The first cell names the model(s) before any parenthesised file list.
    marked = {name for line in rows if "**pinned**" in line
              for name in re.findall(r"`([A-Za-z0-9][A-Za-z0-9._-]*)`", line.split("|")[1].split("(")[0])}
    assert marked == pinned
    unpinned_rows = [line for line in rows if "**pinned**" not in line]
    assert all("trust on first use" in line for line in unpinned_rows)


def test_readmes_do_not_say_nothing_is_pinned() -> None:
    for path in (ROOT / "README.md", ROOT / "image" / "README.md"):
        text = " ".join(path.read_text().split())
        assert "pins no sha256" not in text, path
        assert "every shipped model is trust-on-first-use" not in text, path
        assert "Moonshine tiny-en" in text, f"{path} should say which model is pinned"
