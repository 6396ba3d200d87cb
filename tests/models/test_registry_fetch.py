"""Fetching models from a real HTTP server on loopback: success, corruption, resume, TOFU."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.model_server import (
    ModelServer,
    make_tar_gz,
    make_zip,
    running_server,
    sha256,
    vosk_like_files,
)

from edgevoice.models import (
    DownloadPolicy,
    FetchPhase,
    FetchProgress,
    Manifest,
    ModelArchiveError,
    ModelChecksumError,
    ModelDownloadError,
    ModelKind,
    ModelSource,
    fetch_model,
    resolve_model,
    verify_model,
)

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

FAST = DownloadPolicy(timeout_s=5.0, retries=3, retry_delay_s=0.0)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    yield from running_server()


def manifest_of(*entries: dict[str, Any]) -> Manifest:
    return Manifest.from_dict({"models": list(entries)}, "test")


def vosk_entry(url: str, *, archive: str = "zip", sha: str = "", size: int | None = None) -> dict[str, Any]:
    return {
        "name": "vosk-test-en", "kind": "asr", "engine": "vosk", "language": "en-US",
        "licence": "Apache-2.0", "entry": ".",
        "sources": [{"url": url, "archive": archive, "sha256": sha, "size": size,
                     "root": "vosk-test-en"}],
        "files": ["am/final.mdl", "conf/model.conf", "graph/HCLr.fst"],
    }


def leftovers(models_dir: Path) -> list[str]:
    """Everything in the models folder except the download cache and the pins file."""
    if not models_dir.exists():
        return []
    return sorted(p.name for p in models_dir.iterdir() if p.name not in {".downloads", "pins.json"})


@pytest.mark.parametrize(("archive", "maker"), [("zip", make_zip), ("tar.gz", make_tar_gz)])
def test_fetch_archive_installs_and_resolves(
    server: ModelServer, tmp_path: Path, archive: str, maker: Any
) -> None:
    files = vosk_like_files("vosk-test-en")
    body = maker(files)
    url = server.add(f"vosk-test-en.{archive}", body)
    manifest = manifest_of(vosk_entry(url, archive=archive, sha=sha256(body), size=len(body)))
    updates: list[FetchProgress] = []

    loc = fetch_model("vosk-test-en", tmp_path, updates.append, manifest=manifest, policy=FAST)

    assert loc.path == tmp_path / "vosk-test-en"
    assert loc.source == ModelSource.INSTALLED and loc.kind == ModelKind.ASR and loc.engine == "vosk"
    assert (loc.path / "am" / "final.mdl").read_bytes() == files["vosk-test-en/am/final.mdl"]
    meta = json.loads((loc.path / ".edgevoice-model.json").read_text())
    assert meta["sources"][0]["sha256"] == sha256(body)
    assert meta["sources"][0]["hash_origin"] == "manifest"
    assert set(meta["files"]) == {name.split("/", 1)[1] for name in files}
    downloads = [u for u in updates if u.phase == FetchPhase.DOWNLOAD]
    assert downloads[-1].done == downloads[-1].total == len(body)
    assert any(u.phase == FetchPhase.UNPACK for u in updates)
    assert leftovers(tmp_path) == ["vosk-test-en"]
    assert not list((tmp_path / ".downloads").iterdir())
    assert resolve_model("vosk-test-en", ModelKind.ASR, tmp_path) == loc
    assert verify_model("vosk-test-en", tmp_path, manifest).ok


def test_fetch_single_files_piper_voice(server: ModelServer, tmp_path: Path) -> None:
    onnx, config = b"\x08\x01onnx" * 5000, b'{"audio": {"sample_rate": 22050}}'
    manifest = manifest_of({
        "name": "en_US-test-low", "kind": "tts", "engine": "piper", "language": "en-US",
        "entry": "en_US-test-low.onnx",
        "sources": [
            {"url": server.add("v/en_US-test-low.onnx", onnx), "archive": "file", "sha256": sha256(onnx)},
            {"url": server.add("v/en_US-test-low.onnx.json", config), "archive": "file"},
        ],
        "files": ["en_US-test-low.onnx", "en_US-test-low.onnx.json"],
    })
    loc = fetch_model("en_US-test-low", tmp_path, manifest=manifest, policy=FAST)
    assert loc.path == tmp_path / "en_US-test-low" / "en_US-test-low.onnx"
    assert loc.path.read_bytes() == onnx
    assert loc.config_path is not None and loc.config_path.read_bytes() == config
    assert resolve_model("en_US-test-low", ModelKind.TTS, tmp_path).path == loc.path


def test_checksum_mismatch_installs_nothing(server: ModelServer, tmp_path: Path) -> None:
    body = make_zip(vosk_like_files("vosk-test-en"))
    url = server.add("vosk-test-en.zip", body)
    manifest = manifest_of(vosk_entry(url, sha="0" * 64))

    with pytest.raises(ModelChecksumError) as caught:
        fetch_model("vosk-test-en", tmp_path, manifest=manifest, policy=FAST)

    assert caught.value.code == "model_checksum_mismatch"
    assert sha256(body) in caught.value.message and "Nothing was installed" in caught.value.message
    assert leftovers(tmp_path) == []
    assert not list((tmp_path / ".downloads").iterdir())  # a corrupt download is not kept to resume


def test_archive_lacking_listed_files_installs_nothing(server: ModelServer, tmp_path: Path) -> None:
    files = vosk_like_files("vosk-test-en")
    del files["vosk-test-en/graph/HCLr.fst"]
    url = server.add("vosk-test-en.zip", make_zip(files))
    with pytest.raises(ModelArchiveError, match=r"graph/HCLr\.fst"):
        fetch_model("vosk-test-en", tmp_path, manifest=manifest_of(vosk_entry(url)), policy=FAST)
    assert leftovers(tmp_path) == []


def test_archive_escaping_its_folder_is_refused(server: ModelServer, tmp_path: Path) -> None:
    files = vosk_like_files("vosk-test-en")
    files["../escaped.txt"] = b"evil"
    url = server.add("vosk-test-en.zip", make_zip(files))
    with pytest.raises(ModelArchiveError, match="outside its folder"):
        fetch_model("vosk-test-en", tmp_path / "models", manifest=manifest_of(vosk_entry(url)), policy=FAST)
    assert not (tmp_path / "escaped.txt").exists()
    assert leftovers(tmp_path / "models") == []


def test_interrupted_download_resumes_with_range(server: ModelServer, tmp_path: Path) -> None:
    body = make_zip(vosk_like_files("vosk-test-en", payload=400_000))
    url = server.add("vosk-test-en.zip", body, cut_after=100_000, cuts_left=2)
    manifest = manifest_of(vosk_entry(url, sha=sha256(body)))

    loc = fetch_model("vosk-test-en", tmp_path, manifest=manifest, policy=FAST)

    assert loc.path.is_dir()
    ranges = [r for path, r in server.requests if path == "/vosk-test-en.zip"]
    assert ranges == [None, "bytes=100000-", "bytes=200000-"]


def test_interrupted_fetch_leaves_nothing_installed_and_next_fetch_resumes(
    server: ModelServer, tmp_path: Path
) -> None:
    body = make_zip(vosk_like_files("vosk-test-en", payload=400_000))
    url = server.add("vosk-test-en.zip", body, cut_after=150_000, cuts_left=1)
    manifest = manifest_of(vosk_entry(url, sha=sha256(body)))
    no_retry = DownloadPolicy(timeout_s=5.0, retries=0)

    with pytest.raises(ModelDownloadError) as caught:
        fetch_model("vosk-test-en", tmp_path, manifest=manifest, policy=no_retry)
    assert caught.value.code == "model_download_failed"
    assert "to resume" in caught.value.message
    assert leftovers(tmp_path) == []
    part = tmp_path / ".downloads" / "vosk-test-en--vosk-test-en.zip.part"
    assert part.stat().st_size == 150_000

    fetch_model("vosk-test-en", tmp_path, manifest=manifest, policy=no_retry)
    assert server.requests[-1] == ("/vosk-test-en.zip", "bytes=150000-")
    assert not part.exists()


def test_server_ignoring_range_restarts_from_zero(server: ModelServer, tmp_path: Path) -> None:
    body = make_zip(vosk_like_files("vosk-test-en", payload=300_000))
    url = server.add("vosk-test-en.zip", body, cut_after=50_000, cuts_left=1, honour_range=False)
    loc = fetch_model("vosk-test-en", tmp_path, manifest=manifest_of(vosk_entry(url, sha=sha256(body))),
                      policy=FAST)
    assert loc.path.is_dir()  # the sha256 matched, so the restart did not append to the old part


def test_http_404_is_a_clear_error(server: ModelServer, tmp_path: Path) -> None:
    manifest = manifest_of(vosk_entry(server.url("missing.zip")))
    with pytest.raises(ModelDownloadError, match="HTTP 404"):
        fetch_model("vosk-test-en", tmp_path, manifest=manifest, policy=FAST)
    assert leftovers(tmp_path) == []


def test_tofu_pin_recorded_then_enforced(
    server: ModelServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = make_zip(vosk_like_files("vosk-test-en"))
    url = server.add("vosk-test-en.zip", body)
    manifest = manifest_of(vosk_entry(url))  # no sha256 in the manifest

    with caplog.at_level(logging.WARNING, logger="edgevoice.models"):
        fetch_model("vosk-test-en", tmp_path, manifest=manifest, policy=FAST)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("TRUST ON FIRST USE" in r.getMessage() and sha256(body) in r.getMessage() for r in warnings)
    pins = json.loads((tmp_path / "pins.json").read_text())
    assert pins == {"vosk-test-en": {"vosk-test-en.zip": sha256(body)}}
    assert verify_model("vosk-test-en", tmp_path, manifest).ok

    # The publisher's file changes: a forced re-fetch is held to the pin, the old install stays.
    changed = make_zip(vosk_like_files("vosk-test-en", payload=123_456))
    server.add("vosk-test-en.zip", changed)
    with pytest.raises(ModelChecksumError, match="pinned"):
        fetch_model("vosk-test-en", tmp_path, manifest=manifest, force=True, policy=FAST)
    assert verify_model("vosk-test-en", tmp_path, manifest).ok
    assert leftovers(tmp_path) == ["vosk-test-en"]


def test_verify_detects_changed_and_missing_files(server: ModelServer, tmp_path: Path) -> None:
    body = make_zip(vosk_like_files("vosk-test-en"))
    manifest = manifest_of(vosk_entry(server.add("m.zip", body)))
    loc = fetch_model("vosk-test-en", tmp_path, manifest=manifest, policy=FAST)
    mdl = loc.path / "am" / "final.mdl"
    data = bytearray(mdl.read_bytes())
    data[1000] ^= 0xFF
    mdl.write_bytes(bytes(data))
    (loc.path / "graph" / "Gr.fst").unlink()

    result = verify_model("vosk-test-en", tmp_path, manifest)

    assert not result.ok
    assert any("am/final.mdl changed" in p for p in result.problems)
    assert any("graph/Gr.fst is missing" in p for p in result.problems)


def test_verify_holds_install_to_a_pin_recorded_later(server: ModelServer, tmp_path: Path) -> None:
    body = make_zip(vosk_like_files("vosk-test-en"))
    manifest = manifest_of(vosk_entry(server.add("m.zip", body)))
    fetch_model("vosk-test-en", tmp_path, manifest=manifest, policy=FAST)
    (tmp_path / "pins.json").write_text(json.dumps({"vosk-test-en": {"m.zip": "f" * 64}}))
    result = verify_model("vosk-test-en", tmp_path, manifest)
    assert not result.ok and "the pin says" in result.problems[0]


def test_a_failed_forced_fetch_keeps_the_old_model(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = make_zip(vosk_like_files("vosk-test-en"))
    url = server.add("vosk-test-en.zip", body)
    manifest = manifest_of(vosk_entry(url))
    loc = fetch_model("vosk-test-en", tmp_path, manifest=manifest, policy=FAST)
    old_mdl = (loc.path / "am" / "final.mdl").read_bytes()

    # 1. the download fails (the server lost the file)
    server.files.pop("/vosk-test-en.zip")
    with pytest.raises(ModelDownloadError):
        fetch_model("vosk-test-en", tmp_path, manifest=manifest, force=True, policy=FAST)
    assert verify_model("vosk-test-en", tmp_path, manifest).ok
    assert leftovers(tmp_path) == ["vosk-test-en"]

    # 2. the download is good but the new copy cannot be renamed into place
    server.add("vosk-test-en.zip", body)
    import edgevoice.models.fetch as fetch_module

    real_rename = fetch_module.os.rename

    def failing_rename(src: Any, dst: Any) -> None:
        if Path(src).name == "model" and Path(dst) == tmp_path / "vosk-test-en":
            raise OSError(5, "Input/output error")
        real_rename(src, dst)

    monkeypatch.setattr(fetch_module.os, "rename", failing_rename)
    with pytest.raises(Exception, match="Input/output error"):
        fetch_model("vosk-test-en", tmp_path, manifest=manifest, force=True, policy=FAST)
    monkeypatch.undo()
    assert (tmp_path / "vosk-test-en" / "am" / "final.mdl").read_bytes() == old_mdl
    assert verify_model("vosk-test-en", tmp_path, manifest).ok
    assert leftovers(tmp_path) == ["vosk-test-en"]
