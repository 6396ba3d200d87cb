"""Fetch cost over loopback: edgevoice's fetch (resumable download, sha256, unpack into
staging, per-file hashes, rename) beside the raw steps (urllib read + zipfile extract).

Run: .venv/bin/python bench/models_fetch.py [MB]   (default 40, the size of the small vosk model)
"""

from __future__ import annotations

import hashlib
import io
import shutil
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.model_server import ModelServer, make_zip, sha256

from edgevoice.models import Manifest, fetch_model


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    import random

    rng = random.Random(1)
    files = {f"m/part{i}.bin": rng.randbytes(1_000_000) for i in range(megabytes)}
    body = make_zip(files)
    server = ModelServer()
    server.start()
    url = server.add("m.zip", body)
    manifest = Manifest.from_dict({"models": [{
        "name": "bench-model", "kind": "asr",
        "sources": [{"url": url, "archive": "zip", "sha256": sha256(body), "root": "m"}],
    }]}, "bench")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        with urllib.request.urlopen(url) as response:
            data = response.read()
        hashlib.sha256(data).hexdigest()
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.extractall(Path(tmp) / "raw")
        rows.append(("raw urllib + sha256 + zipfile", time.perf_counter() - t0, time.process_time() - c0))
        shutil.rmtree(Path(tmp) / "raw")

        t0, c0 = time.perf_counter(), time.process_time()
        fetch_model("bench-model", Path(tmp) / "models", manifest=manifest)
        rows.append(("edgevoice fetch_model", time.perf_counter() - t0, time.process_time() - c0))
    server.stop()
    print(f"fetch of a {len(body) / 1e6:.1f} MB zip over loopback (server thread in this process)")
    print(f"{'path':34} {'wall s':>7} {'CPU s':>7} {'MB/s':>7}")
    for name, wall, cpu in rows:
        print(f"{name:34} {wall:7.2f} {cpu:7.2f} {len(body) / 1e6 / wall:7.1f}")


if __name__ == "__main__":
    main()
