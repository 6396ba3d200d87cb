"""On-device knowledge: an SQLite FTS5 index of the device's own files, looked up every
turn (docs/knowledge.md). Agents read from it; audio knows nothing of it.

- :mod:`.chunking`: Markdown, text and Q/A TOML cut into chunks (pure);
- :mod:`.index`: the FTS5 index, built incrementally and atomically;
- :mod:`.retrieval`: a turn's text to passages with a confidence;
- :mod:`.answer`: what the local agent says from them (pure);
- :mod:`.bundle`: bundles synced to fleets over MQTT;
- :mod:`.service`: :class:`KnowledgeBase`, what the daemon and the CLI run.
"""

from __future__ import annotations

from edgevoice.device.knowledge.errors import (
    BundleChecksumError,
    BundleDownloadError,
    BundleError,
    KnowledgeDisabledError,
    KnowledgeError,
)
from edgevoice.device.knowledge.retrieval import Passage, Retrieval
from edgevoice.device.knowledge.service import KnowledgeBase, default_index_path

__all__ = [
    "BundleChecksumError",
    "BundleDownloadError",
    "BundleError",
    "KnowledgeBase",
    "KnowledgeDisabledError",
    "KnowledgeError",
    "Passage",
    "Retrieval",
    "default_index_path",
]
