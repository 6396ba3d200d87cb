from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edgevoice.device.cli import main
from edgevoice.device.config import Config, ConfigError, load_config, to_dict
from edgevoice.device.config.docs import render

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

ROOT = Path(__file__).resolve().parents[2]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_defaults_load_without_any_file(tmp_path: Path) -> None:
    loaded = load_config(search_paths=[tmp_path / "missing.toml"])
    assert loaded.config == Config()
    assert loaded.sources == ()


def test_later_files_and_overrides_win_key_by_key(tmp_path: Path) -> None:
    system = write(tmp_path / "system.toml", '[audio]\nbackend = "wav"\nperiod_ms = 20\n')
    user = write(tmp_path / "user.toml", "[audio]\nperiod_ms = 10\n")
    loaded = load_config(
        search_paths=[system, user],
        overrides=["audio.capture_channels=3", "audio.mic_channels=[0, 2]", "agent.url=http://x:1/a"],
    )
    assert loaded.config.audio.backend == "wav"
    assert loaded.config.audio.period_ms == 10
    assert loaded.config.audio.mic_channels == (0, 2)
    assert loaded.config.agent.url == "http://x:1/a"
    assert loaded.sources == (str(system), str(user), "--set", "--set", "--set")


def test_every_problem_is_reported_with_file_key_expected_and_found(tmp_path: Path) -> None:
    bad = write(
        tmp_path / "bad.toml",
        '[audio]\nbackend = "pulse"\ncapture_chanels = 4\nperiod_ms = "10"\nvolume = 1.5\n'
        "[nosuch]\nx = 1\n",
    )
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    problems = {p.key: p for p in info.value.problems}
    assert set(problems) == {
        "audio.backend", "audio.capture_chanels", "audio.period_ms", "audio.volume", "nosuch"
    }
    assert all(p.source == str(bad) for p in problems.values())
    assert "did you mean 'capture_channels'" in problems["audio.capture_chanels"].message
    assert "expected one of" in problems["audio.backend"].message
    assert "'pulse'" in problems["audio.backend"].message
    assert "found '10' (a string)" in problems["audio.period_ms"].message
    assert "at most 1" in problems["audio.volume"].message


def test_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    bad = write(tmp_path / "broken.toml", "[audio\n")
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    assert str(bad) in str(info.value)
    assert "not valid TOML" in str(info.value)


def test_bool_is_not_an_integer_and_int_is_a_float(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected an integer"):
        load_config(search_paths=[], overrides=["audio.capture_channels=true"])
    loaded = load_config(search_paths=[], overrides=["audio.volume=1"])
    assert loaded.config.audio.volume == 1.0
    assert isinstance(loaded.config.audio.volume, float)


def test_secrets_are_redacted_in_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write(tmp_path / "c.toml", '[agent]\napi_key = "sk-very-secret"\n')
    assert to_dict(load_config(cfg).config)["agent"]["api_key"] == "***"
    assert main(["config", "show", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "sk-very-secret" not in out
    assert 'api_key = "***"' in out
    assert main(["config", "show", "--json", "--config", str(cfg)]) == 0
    assert "sk-very-secret" not in capsys.readouterr().out


def test_secrets_never_reach_logs(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.toml", '[agent]\napi_key = "sk-log-secret"\n')
    script = (
        "import logging, sys\n"
        "from edgevoice.device.cli.common import load\n"
        "from edgevoice.device.system.logs import setup_logging\n"
        "import argparse\n"
        "setup_logging()\n"
        f"load(argparse.Namespace(config={str(cfg)!r}, overrides=[]))\n"
        "logging.getLogger('x').warning('key is %s', 'sk-log-secret')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert "key is ***" in result.stderr
    assert "sk-log-secret" not in result.stderr


def test_config_check_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path / "good.toml", '[llm]\nprovider = "local"\n')
    bad = write(tmp_path / "bad.toml", '[llm]\nprovider = "gpt"\n')
    assert main(["config", "check", "--config", str(good)]) == 0
    assert main(["config", "check", "--config", str(bad)]) == 3
    assert "llm.provider" in capsys.readouterr().err
    assert main(["config", "check", "--config", str(tmp_path / "none.toml")]) == 3


def test_docs_reference_is_in_step_with_the_code() -> None:
    committed = (ROOT / "docs" / "config.md").read_text()
    stale = "docs/config.md is stale: run `./dev edgevoice config docs > docs/config.md`"
    assert committed == render(), stale


def test_every_key_is_documented() -> None:
    text = render()
    for section, table in to_dict(Config()).items():
        assert f"## [{section}]" in text
        for key in table:
            assert f"| `{key}` |" in text, f"{section}.{key} undocumented"
