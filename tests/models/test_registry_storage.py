"""Disk full and permission errors during a fetch: reported clearly, nothing left behind.

Disk full uses a real tiny tmpfs (needs root to mount); permission denied uses a
read-only folder, entered as root without CAP_DAC_OVERRIDE (``setpriv``) since
root otherwise ignores file modes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.model_server import ModelServer, make_zip, running_server, sha256, vosk_like_files

from edgevoice.models import DownloadPolicy, Manifest, ModelStorageError, fetch_model

FAST = DownloadPolicy(timeout_s=5.0, retries=1, retry_delay_s=0.0)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    yield from running_server()


def tiny_disk(path: Path, size_kb: int) -> Iterator[Path]:
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(path)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill up ({done.stderr.strip()}); needs root")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def entry(url: str, body: bytes, *, with_size: bool) -> dict[str, Any]:
    return {
        "name": "vosk-test-en", "kind": "asr", "engine": "vosk", "language": "en-US",
        "sources": [{"url": url, "archive": "zip", "sha256": sha256(body),
                     "size": len(body) if with_size else None, "root": "vosk-test-en"}],
        "files": ["am/final.mdl"],
    }


def contents(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_disk_full_while_downloading(server: ModelServer, tmp_path: Path) -> None:
    body = make_zip(vosk_like_files("vosk-test-en", payload=300_000))
    url = server.add("m.zip", body)
    manifest = Manifest.from_dict({"models": [entry(url, body, with_size=False)]}, "test")
    for disk in tiny_disk(tmp_path / "disk", 256):
        with pytest.raises(ModelStorageError) as caught:
            fetch_model("vosk-test-en", disk, manifest=manifest, policy=FAST)
        assert caught.value.code == "model_storage_error"
        assert "no space left" in caught.value.message
        assert "[models] dir" in caught.value.message
        assert contents(disk) == [".downloads"]  # the partial download was deleted to free space


def test_disk_full_while_unpacking(server: ModelServer, tmp_path: Path) -> None:
    body = make_zip(vosk_like_files("vosk-test-en", payload=300_000))  # ~0.7 MB, unpacks to the same
    url = server.add("m.zip", body)
    manifest = Manifest.from_dict({"models": [entry(url, body, with_size=True)]}, "test")
    for disk in tiny_disk(tmp_path / "disk", 1024):
        with pytest.raises(ModelStorageError, match="no space left"):
            fetch_model("vosk-test-en", disk, manifest=manifest, policy=FAST)
        assert contents(disk) == [".downloads"]
        assert shutil.disk_usage(disk).used < 64 * 1024


def test_download_bigger_than_free_space_refused_before_starting(server: ModelServer, tmp_path: Path) -> None:
    body = make_zip(vosk_like_files("vosk-test-en", payload=300_000))
    url = server.add("m.zip", body)
    manifest = Manifest.from_dict({"models": [entry(url, body, with_size=True)]}, "test")
    for disk in tiny_disk(tmp_path / "disk", 128):
        with pytest.raises(ModelStorageError, match=r"needs about 0\.\d MB to download"):
            fetch_model("vosk-test-en", disk, manifest=manifest, policy=FAST)
        assert server.requests == []


_CHILD = """
import json, sys
from edgevoice.models import DownloadPolicy, Manifest, ModelError, fetch_model
manifest = Manifest.from_dict(json.loads(sys.argv[2]), "test")
try:
    fetch_model("vosk-test-en", sys.argv[1], manifest=manifest, policy=DownloadPolicy(retries=0))
except ModelError as err:
    print(json.dumps(err.as_dict()))
"""


def test_permission_denied_is_explained(server: ModelServer, tmp_path: Path) -> None:
    body = make_zip(vosk_like_files("vosk-test-en"))
    url = server.add("m.zip", body)
    manifest = {"models": [entry(url, body, with_size=True)]}
    models = tmp_path / "models"
    models.mkdir()
    models.chmod(0o555)
    command = [sys.executable, "-c", _CHILD, str(models), json.dumps(manifest)]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root ignores file modes and setpriv is not there to drop CAP_DAC_OVERRIDE")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    finally:
        models.chmod(0o755)
    assert done.returncode == 0, done.stderr
    error = json.loads(done.stdout)
    assert error["code"] == "model_storage_error"
    assert "permission denied" in error["message"] and str(models) in error["message"]
    assert "[models] dir" in error["message"]
    assert list(models.iterdir()) == []
    assert server.requests == []
