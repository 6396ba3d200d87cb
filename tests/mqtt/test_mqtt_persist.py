"""Config patches: validated with the file's rules, written atomically, restart keys."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from edgevoice.device.config.loader import ConfigError
from edgevoice.device.config.persist import apply_patch_to_raw, persist_patch, write_atomically


def test_patch_changes_only_what_it_names_and_says_what_needs_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[device]\nname = "kitchen"\n[audio]\nvolume = 0.8\n')
    result = persist_patch(path, {"audio": {"volume": 0.5, "backend": "wav"}, "llm": {"provider": "ollama"}})
    assert sorted(result.changed) == ["audio.backend", "audio.volume", "llm.provider"]
    assert result.restart_keys == ("audio.backend",)
    assert result.restart_required
    data = tomllib.loads(path.read_text())
    assert data == {"device": {"name": "kitchen"}, "audio": {"volume": 0.5, "backend": "wav"},
                    "llm": {"provider": "ollama"}}
    assert result.config.audio.volume == 0.5


def test_live_keys_need_no_restart(tmp_path: Path) -> None:
    result = persist_patch(tmp_path / "new.toml", {"mqtt": {"telemetry_interval_s": 10}})
    assert result.changed == ("mqtt.telemetry_interval_s",)
    assert not result.restart_required
    assert (tmp_path / "new.toml").stat().st_mode & 0o777 == 0o600  # may hold secrets


def test_none_removes_a_key_back_to_its_default(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[audio]\nvolume = 0.2\n")
    result = persist_patch(path, {"audio": {"volume": None}})
    assert result.config.audio.volume == 1.0
    assert tomllib.loads(path.read_text()) == {}
    assert apply_patch_to_raw({"a": {"x": 1}, "b": {"y": 2}}, {"b": None}) == {"a": {"x": 1}}


@pytest.mark.parametrize(
    "patch",
    [
        {"audio": {"volume": 3}},
        {"audio": {"volme": 0.5}},
        {"audio": {"backend": "cassette"}},
        {"nosuch": {"x": 1}},
        {"audio": "loud"},
        {"audio": {"volume": "0.5"}},
    ],
)
def test_invalid_patch_writes_nothing(tmp_path: Path, patch: dict[str, object]) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[audio]\nvolume = 0.8\n")
    before = path.read_bytes(), path.stat().st_mtime_ns
    with pytest.raises(ConfigError) as err:
        persist_patch(path, patch)
    assert err.value.problems
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.toml"]


def test_validation_sees_the_other_layers(tmp_path: Path) -> None:
    path = tmp_path / "user.toml"
    below = [("/etc/edgevoice/config.toml", {"audio": {"backend": "wav"}})]
    result = persist_patch(path, {"audio": {"backend": "wav"}}, below=below)
    assert result.changed == ()  # already the effective value


def test_a_crash_while_writing_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[audio]\nvolume = 0.8\n")

    def power_cut(src: str, dst: str) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(os, "replace", power_cut)
    with pytest.raises(OSError):
        persist_patch(path, {"audio": {"volume": 0.1}})
    assert path.read_text() == "[audio]\nvolume = 0.8\n"
    assert [p.name for p in tmp_path.iterdir()] == ["c.toml"]  # no temp file left behind


def test_write_atomically_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("old")
    path.chmod(0o640)
    write_atomically(path, "new")
    assert path.read_text() == "new"
    assert path.stat().st_mode & 0o777 == 0o640
