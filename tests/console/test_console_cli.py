"""``edgevoice console token``: prints the token the console will use, made once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgevoice.device.cli import main
from edgevoice.device.config import load_config
from edgevoice.device.console.tokens import load_tokens


def _run(capsys: pytest.CaptureFixture[str], state: Path, *args: str) -> str:
    code = main(["console", "token", "--set", f"device.state_dir={state}", *args])
    assert code == 0
    return capsys.readouterr().out.strip()


def test_the_token_is_made_once_and_is_the_one_the_console_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    full = _run(capsys, state)
    assert _run(capsys, state) == full
    captions = _run(capsys, state, "--captions")
    assert captions != full and len(captions) >= 40
    assert json.loads(_run(capsys, state, "--captions", "--json")) == {"token": captions, "role": "captions"}
    config = load_config(None, (f"device.state_dir={state}",)).config
    tokens = load_tokens(config.console, state)
    assert (tokens.full, tokens.captions) == (full, captions)


def test_an_unwritable_state_dir_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code = main(["console", "token", "--set", f"device.state_dir={blocker}"])
    assert code == 1
    assert "state_dir is writable" in capsys.readouterr().err
