"""``knowledge_sync {url, sha256}`` over a real mosquitto, bundles from a loopback HTTP
server: a good bundle is indexed and answered with the new stats; a bad one changes
nothing and says why with a stable code."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import tarfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from support.model_server import ModelServer, make_tar_gz, make_zip
from support.mosquitto import Broker
from support.mqtt_fakes import Observer, await_until, device_config, mqtt_config

from edgevoice.device.config import load_config
from edgevoice.device.knowledge import KnowledgeBase
from edgevoice.device.mqtt.bridge import MqttBridge
from edgevoice.device.runtime.daemon import Daemon

ROOT = Path(__file__).resolve().parents[2]
MUSEUM = ROOT / "examples" / "knowledge" / "museum"
HOTEL = (ROOT / "examples" / "knowledge" / "hotel" / "faq.toml").read_bytes()
CLINIC = (ROOT / "examples" / "knowledge" / "clinic" / "faq.toml").read_bytes()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def files() -> Iterator[ModelServer]:
    server = ModelServer()
    server.start()
    yield server
    server.stop()


@asynccontextmanager
async def kiosk(broker: Broker, tmp_path: Path, *, knowledge: bool = True
                ) -> AsyncIterator[tuple[Daemon, Observer]]:
    """The daemon's fleet commands (its real knowledge_sync) on a bridge to mosquitto."""
    config = tmp_path / "config.toml"
    config.write_text(f'[knowledge]\nenabled = {str(knowledge).lower()}\npaths = ["{MUSEUM}"]\n'
                      f'[device]\nstate_dir = "{tmp_path / "state"}"\n')
    daemon = Daemon(load_config(config, ()), config_path=config, root=tmp_path)
    await daemon._open_knowledge()
    assert (daemon.knowledge is not None) == knowledge
    daemon.bus.bind(asyncio.get_running_loop())
    bridge = MqttBridge(mqtt_config(broker, "dev1"), device_config(), "dev1", daemon.bus,
                        daemon.control, None)
    await bridge.start()
    observer = Observer(broker)
    observer.subscribe("edgevoice/reply/test/dev1")  # a device answers on its own reply topic
    try:
        assert await await_until(lambda: bridge.connected), broker.log
        yield daemon, observer
    finally:
        observer.close()
        await bridge.stop()
        if daemon.knowledge is not None:
            daemon.knowledge.close()


async def sync(observer: Observer, url: str, digest: str) -> dict[str, Any]:
    correlation = os.urandom(8)
    observer.publish("edgevoice/dev1/cmd/knowledge_sync", {"url": url, "sha256": digest},
                     response_topic="edgevoice/reply/test", correlation=correlation)
    hits = await observer.await_for(
        lambda m: getattr(m.properties, "CorrelationData", None) == correlation, timeout_s=30)
    answer: dict[str, Any] = hits[0].json()
    return answer


def best(knowledge: KnowledgeBase, text: str) -> str | None:
    found = knowledge.lookup(text)
    return found.passages[0].key if found.passages else None


async def test_a_good_bundle_is_indexed_and_answered_with_the_new_stats(
    broker: Broker, files: ModelServer, tmp_path: Path
) -> None:
    async with kiosk(broker, tmp_path) as (daemon, observer):
        kb = daemon.knowledge
        before = kb.stats()["chunks"]
        assert best(kb, "what time is check in at the hotel") != "faq#check-in"
        bundle = make_tar_gz({"hotel/faq.toml": HOTEL, "hotel/notes.bin": b"\x00\x01 skipped"})
        answer = await sync(observer, files.add("hotel.tar.gz", bundle), sha(bundle))
        assert answer["ok"], answer
        result = answer["result"]
        assert result["bundle"]["sha256"] == sha(bundle) and result["bundle"]["files"] == 1
        assert result["stats"]["chunks"] == before + 54
        assert "Hotel Meridian" in result["stats"]["titles"]
        assert best(kb, "when can I check in") == "faq#check-in"

        # A second bundle replaces the first: the hotel goes, the clinic comes.
        second = make_zip({"faq.toml": CLINIC})
        answer = await sync(observer, files.add("clinic.zip", second), sha(second).upper())
        assert answer["ok"], answer
        assert answer["result"]["stats"]["chunks"] == before + 54
        assert best(kb, "how do I order a repeat prescription") == "faq#repeat-prescriptions"
        assert "Hotel Meridian" not in answer["result"]["stats"]["titles"]
        bundles = list((kb.state_dir / "bundles").iterdir())
        assert [b.name for b in bundles] == [sha(second)]


def _traversal() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        info = tarfile.TarInfo("../../escaped.md")
        data = b"# Escaped\n\nThis must never be written.\n"
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _symlink() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        info = tarfile.TarInfo("link.md")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        archive.addfile(info)
    return buf.getvalue()


BAD_BUNDLES = {
    "checksum": (make_tar_gz({"faq.toml": HOTEL}), "0" * 64, "knowledge_bundle_checksum_mismatch"),
    "not an archive": (b"<html>not found</html>", None, "knowledge_bundle_invalid"),
    "path traversal": (_traversal(), None, "knowledge_bundle_invalid"),
    "symlink": (_symlink(), None, "knowledge_bundle_invalid"),
    "broken toml": (make_tar_gz({"faq.toml": b'title = "x"\n[[entry]]\nquestion = "q"\n'}), None,
                    "knowledge_bundle_invalid"),
    "no knowledge files": (make_zip({"readme.pdf": b"%PDF"}), None, "knowledge_bundle_invalid"),
    "bad sha256": (make_zip({"faq.toml": HOTEL}), "abc", "knowledge_bundle_invalid"),
}


async def test_bad_bundles_change_nothing_and_say_why(broker: Broker, files: ModelServer,
                                                      tmp_path: Path) -> None:
    async with kiosk(broker, tmp_path) as (daemon, observer):
        kb = daemon.knowledge
        good = make_tar_gz({"faq.toml": HOTEL})
        assert (await sync(observer, files.add("good.tgz", good), sha(good)))["ok"]
        index = kb.index_path.read_bytes()
        before = kb.stats()
        for name, (body, digest, code) in BAD_BUNDLES.items():
            url = files.add(name.replace(" ", "-") + ".bin", body)
            answer = await sync(observer, url, digest or sha(body))
            assert not answer["ok"], name
            assert answer["error"]["code"] == code, (name, answer)
            assert "nothing was changed" in answer["error"]["message"], answer
        spaced = await sync(observer, files.url("with space.tgz"), sha(b"x"))
        assert spaced["error"]["code"] == "knowledge_bundle_invalid"
        missing = await sync(observer, files.url("nope.tgz"), sha(b"x"))
        assert missing["error"]["code"] == "knowledge_bundle_download_failed"
        assert "nothing was changed" in missing["error"]["message"]
        after = kb.stats()
        assert kb.index_path.read_bytes() == index
        assert after["bundle"] == before["bundle"] and after["chunks"] == before["chunks"]
        assert best(kb, "when can I check in") == "faq#check-in"
        assert not (tmp_path / "escaped.md").exists() and not (kb.state_dir.parent / "escaped.md").exists()
        assert [b.name for b in (kb.state_dir / "bundles").iterdir()] == [sha(good)]


async def test_knowledge_sync_on_a_device_without_knowledge(broker: Broker, tmp_path: Path) -> None:
    async with kiosk(broker, tmp_path, knowledge=False) as (_, observer):
        answer = await sync(observer, "http://127.0.0.1:9/x", "0" * 64)
    assert answer["error"]["code"] == "knowledge_disabled"
    assert "enabled = true" in answer["error"]["message"]
