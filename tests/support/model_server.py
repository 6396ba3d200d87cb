"""A real HTTP server on loopback that serves model files, for the model registry tests.

It honours ``Range`` (206 + Content-Range) unless told not to, and can cut the
connection after a number of body bytes for the first N requests of a path, to
exercise resumed downloads.
"""

from __future__ import annotations

import hashlib
import io
import random
import re
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_RANGE = re.compile(r"bytes=(\d+)-$")


@dataclass
class Served:
    body: bytes
    cut_after: int | None = None  # close the connection after this many body bytes...
    cuts_left: int = 0  # ...for this many requests
    honour_range: bool = True
    status: int = 200


@dataclass
class ModelServer:
    files: dict[str, Served] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range header)
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def add(self, path: str, body: bytes, **kwargs: Any) -> str:
        self.files["/" + path.lstrip("/")] = Served(body, **kwargs)
        return self.url(path)

    def start(self) -> None:
        server_ref = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                range_header = self.headers.get("Range")
                server_ref.requests.append((self.path, range_header))
                served = server_ref.files.get(self.path)
                if served is None:
                    self.send_error(404)
                    return
                if served.status != 200:
                    self.send_error(served.status)
                    return
                body, start = served.body, 0
                match = _RANGE.match(range_header or "")
                if match and served.honour_range:
                    start = int(match.group(1))
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                rest = body[start:]
                self.send_header("Content-Length", str(len(rest)))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                if served.cut_after is not None and served.cuts_left > 0:
                    served.cuts_left -= 1
                    self.wfile.write(rest[: served.cut_after])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(rest)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def running_server() -> Iterator[ModelServer]:
    server = ModelServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buf.getvalue()


def make_tar_gz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def vosk_like_files(root: str, payload: int = 200_000) -> dict[str, bytes]:
    """The layout of a vosk model folder with deterministic, incompressible content."""
    blob = random.Random(f"{root}/{payload}").randbytes(payload)
    return {
        f"{root}/am/final.mdl": blob,
        f"{root}/conf/model.conf": b"--min-active=200\n",
        f"{root}/graph/HCLr.fst": blob[: payload // 2],
        f"{root}/graph/Gr.fst": blob[: payload // 3],
        f"{root}/ivector/final.ie": blob[: payload // 4],
        f"{root}/README": b"test model\n",
    }
