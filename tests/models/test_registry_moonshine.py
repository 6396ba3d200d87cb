"""The registry knows Moonshine tiny-en: the copy moonshine-voice bundles, a model folder
given by path, and the manifest entry that fetches the upstream files with pinned sha256."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.model_server import ModelServer, running_server

from edgevoice.models import (
    DownloadPolicy,
    Manifest,
    ModelChecksumError,
    ModelKind,
    ModelSource,
    fetch_model,
    find_models,
    resolve_model,
)
from edgevoice.models.manifest import shipped_manifest

FILES = ("encoder_model.ort", "decoder_model_merged.ort", "tokenizer.bin")
FAST = DownloadPolicy(timeout_s=10.0, retries=2, retry_delay_s=0.0)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    yield from running_server()


def bundled_folder() -> Path:
    return resolve_model("moonshine-tiny-en", ModelKind.ASR).path


def test_the_bundled_model_is_found_for_english(tmp_path: Path) -> None:
    loc = resolve_model("moonshine-tiny-en", ModelKind.ASR, tmp_path)
    assert loc.source == ModelSource.BUNDLED
    assert (loc.engine, loc.language) == ("moonshine", "en")
    assert loc.path.parts[-3:] == ("moonshine_voice", "assets", "tiny-en")
    assert all((loc.path / f).is_file() for f in FILES)
    for language in ("en", "en-GB", "en-US"):
        found = find_models(ModelKind.ASR, language=language, engine="moonshine", models_dir=tmp_path)
        # moonshine-cpp's base-en too, where that (x86-64 only) wheel is installed
        assert [m.name for m in found if m.name != "moonshine-base-en"] == ["moonshine-tiny-en"]
    assert not find_models(ModelKind.ASR, language="ko", engine="moonshine", models_dir=tmp_path)


def test_a_model_folder_by_path_is_a_moonshine_model(tmp_path: Path) -> None:
    loc = resolve_model(str(bundled_folder()), ModelKind.ASR, tmp_path)
    assert (loc.engine, loc.source) == ("moonshine", ModelSource.PATH)


def test_the_manifest_pins_the_bundled_files() -> None:
    """The pinned sha256 are those of the bundled copy (whose encoder and decoder CRC32C
    match the upstream catalogue's, docs/hearing.md): a newer wheel with other bytes fails."""
    entry = shipped_manifest().get("moonshine-tiny-en")
    assert entry is not None and entry.engine == "moonshine" and entry.kind == ModelKind.ASR
    folder = bundled_folder()
    pinned = {s.saved_name: (s.sha256, s.size) for s in entry.sources}
    assert set(pinned) == set(FILES) == set(entry.files)
    for name, (sha, size) in pinned.items():
        data = (folder / name).read_bytes()
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (sha, size)


def _served_entry(server: ModelServer, corrupt: str | None = None) -> Manifest:
    """The shipped manifest entry as it is, its URLs pointed at a loopback server that
    serves the bundled files (upstream's bytes), one of them flipped when asked."""
    raw: dict[str, Any] = json.loads(
        (Path(__file__).resolve().parents[2] / "models" / "manifest.json").read_text())
    (row,) = [m for m in raw["models"] if m["name"] == "moonshine-tiny-en"]
    folder = bundled_folder()
    for source in row["sources"]:
        name = source["url"].rsplit("/", 1)[1]
        body = (folder / name).read_bytes()
        if name == corrupt:
            body = body[:-1] + bytes([body[-1] ^ 1])
        source["url"] = server.add(f"/model/tiny-en/{name}", body)
    return Manifest.from_dict({"models": [row]}, "test")


def test_fetch_installs_the_upstream_files_checked_against_the_pins(
    server: ModelServer, tmp_path: Path,
) -> None:
    loc = fetch_model("moonshine-tiny-en", tmp_path, manifest=_served_entry(server), policy=FAST)
    assert loc.engine == "moonshine" and loc.source == ModelSource.INSTALLED
    assert all((loc.path / f).is_file() for f in FILES)
    # a fetched copy comes before the bundled one
    assert find_models(ModelKind.ASR, engine="moonshine", models_dir=tmp_path)[0].path == loc.path


def test_fetch_refuses_a_file_that_differs_from_its_pin(server: ModelServer, tmp_path: Path) -> None:
    with pytest.raises(ModelChecksumError, match="tokenizer.bin"):
        fetch_model("moonshine-tiny-en", tmp_path,
                    manifest=_served_entry(server, corrupt="tokenizer.bin"), policy=FAST)
    found = find_models(ModelKind.ASR, engine="moonshine", models_dir=tmp_path)
    assert {m.source for m in found} == {ModelSource.BUNDLED}  # nothing half-fetched


def test_the_bundled_base_model_is_found_where_moonshine_cpp_is_installed(tmp_path: Path) -> None:
    found = {m.name: m for m in find_models(ModelKind.ASR, language="en-GB", engine="moonshine",
                                            models_dir=tmp_path)}
    if "moonshine-base-en" not in found:
        pytest.skip("moonshine-cpp (x86-64 wheels only) is not installed")
    loc = found["moonshine-base-en"]
    assert (loc.source, loc.engine, loc.language) == (ModelSource.BUNDLED, "moonshine", "en")
    assert loc.path.parts[-3:] == ("moonshine_cpp", "models", "base-en")
    assert all((loc.path / f).is_file() for f in FILES)
