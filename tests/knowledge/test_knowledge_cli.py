"""``edgevoice knowledge`` from the shell: add, list, search, rebuild, stats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgevoice.device.cli import main
from edgevoice.device.cli.common import EXIT_FAILURE, EXIT_OK

ROOT = Path(__file__).resolve().parents[2]
HOTEL = ROOT / "examples" / "knowledge" / "hotel"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'[knowledge]\nindex = "{tmp_path / "index.sqlite3"}"\n')
    return path


def test_add_saves_the_path_and_indexes_it(capsys: pytest.CaptureFixture[str], config: Path) -> None:
    code, out, _ = run(capsys, "knowledge", "add", str(HOTEL), "--config", str(config))
    assert code == EXIT_OK
    assert "added" in out and "2 files" in out and "enabled is false" in out
    assert str(HOTEL) in config.read_text()
    code, out, _ = run(capsys, "knowledge", "add", str(HOTEL), "--config", str(config), "--json")
    data = json.loads(out)
    assert data["added"] is False and data["build"]["rechunked"] == []
    assert config.read_text().count(str(HOTEL)) == 1


def test_add_refuses_what_is_not_there(capsys: pytest.CaptureFixture[str], config: Path,
                                       tmp_path: Path) -> None:
    code, _, err = run(capsys, "knowledge", "add", str(tmp_path / "nope"), "--config", str(config))
    assert code == EXIT_FAILURE and "does not exist" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "knowledge", "add", str(tmp_path / "empty"), "--config", str(config))
    assert code == EXIT_FAILURE and "no knowledge files" in err
    assert "paths" not in config.read_text()


def test_search_list_rebuild_stats(capsys: pytest.CaptureFixture[str], config: Path) -> None:
    opts = ("--config", str(config), "--set", f"knowledge.paths=[{json.dumps(str(HOTEL))}]")
    code, out, _ = run(capsys, "knowledge", "search", "is there an airport shuttle", *opts, "--json")
    assert code == EXIT_OK
    data = json.loads(out)
    top = data["chunks"][0]
    assert top["key"] == "faq#airport-transfer" and top["source"].endswith("faq.toml")
    assert top["confidence"] >= data["answer_score"] and top["local_answer"] is True
    assert "12 euros" in top["text"]
    code, out, _ = run(capsys, "knowledge", "search", "is there an airport shuttle", *opts)
    assert out.startswith("1. ") and "[answer]" in out and "faq#airport-transfer" in out
    code, out, _ = run(capsys, "knowledge", "list", *opts)
    assert "Hotel Meridian" in out and " 54  " in out
    code, out, _ = run(capsys, "knowledge", "rebuild", *opts, "--json")
    assert json.loads(out)["rechunked"] == []
    code, out, _ = run(capsys, "knowledge", "rebuild", *opts, "--full", "--json")
    assert len(json.loads(out)["rechunked"]) == 2
    code, out, _ = run(capsys, "knowledge", "stats", *opts, "--json")
    stats = json.loads(out)
    assert stats["files"] == 2 and stats["qa_entries"] == 54 and stats["bundle"] is None
    code, out, _ = run(capsys, "knowledge", "search", "zzzz qqqq", *opts)
    assert code == EXIT_FAILURE and "nothing" in out


def test_chat_looks_turns_up_like_the_daemon(capsys: pytest.CaptureFixture[str], config: Path) -> None:
    opts = ("--config", str(config), "--set", "llm.provider=local", "--set", "knowledge.enabled=true",
            "--set", f"knowledge.paths=[{json.dumps(str(HOTEL))}]")
    code, out, _ = run(capsys, "chat", "is there an airport shuttle", *opts)
    assert code == EXIT_OK and out.startswith("Our shuttle to the airport leaves every hour")
    code, out, _ = run(capsys, "chat", "do you have a casino", *opts, "--json")
    assert json.loads(out)["reply"].startswith("Sorry, I don't know that. I can answer questions about "
                                               "Hotel Meridian")
