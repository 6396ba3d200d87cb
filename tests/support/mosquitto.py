"""A real mosquitto for tests: loopback ports, a password file, an ACL and a TLS
listener signed by a CA made here with openssl.

``broker`` (function scope) starts a fresh broker per test, so retained messages never
leak between tests; the certificates are made once per session. Every user's password
is ``pw-<user>``. The ACL is the one ``image/mosquitto/acl`` ships (devices read and
write only under ``edgevoice/<username>/``, read group/all commands, write replies;
``fleet`` reads and writes everything under ``edgevoice/``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_ACL = ROOT / "image" / "mosquitto" / "acl"
DEFAULT_USERS = ("dev1", "dev2", "dev3", "dev4", "intruder", "fleet")


def password_of(user: str) -> str:
    return f"pw-{user}"


@dataclass(frozen=True)
class Pki:
    ca_file: Path
    server_cert: Path
    server_key: Path
    wrong_ca_file: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(folder: Path) -> Pki:
    """A CA, a server certificate for 127.0.0.1/localhost, and an unrelated CA."""
    folder.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=edgevoice test CA", cwd=folder)
    _openssl("req", "-x509", *ec, "-keyout", "wrong.key", "-out", "wrong-ca.crt", "-days", "2",
             "-subj", "/CN=some other CA", cwd=folder)
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost",
             cwd=folder)
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "san.ext", cwd=folder)
    for item in folder.iterdir():
        item.chmod(0o644)  # a root mosquitto may drop to the `mosquitto` user
    return Pki(folder / "ca.crt", folder / "server.crt", folder / "server.key", folder / "wrong-ca.crt")


@dataclass
class Broker:
    folder: Path
    pki: Pki
    users: tuple[str, ...] = DEFAULT_USERS
    port: int = field(default_factory=free_port)
    tls_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    # Keep retained messages and persistent sessions across a restart.
    persistence: bool = False

    def __post_init__(self) -> None:
        # Each free port is found by binding port 0 and letting go, so the two can be the
        # same one: a clean-clone CI run met it once (mosquitto: "Address already in use"
        # on its second listener).
        while self.tls_port == self.port:
            self.tls_port = free_port()

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    @property
    def tls_url(self) -> str:
        return f"mqtts://127.0.0.1:{self.tls_port}"

    @property
    def log(self) -> str:
        path = self.folder / "mosquitto.log"
        return path.read_text() if path.exists() else ""

    def write_config(self) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        passwd = self.folder / "passwd"
        # Plain "user:password" lines, hashed in place by one mosquitto_passwd run.
        passwd.write_text("".join(f"{user}:{password_of(user)}\n" for user in self.users))
        subprocess.run(["mosquitto_passwd", "-U", str(passwd)], check=True, capture_output=True)
        passwd.chmod(0o644)
        acl = self.folder / "acl"
        shutil.copyfile(SHIPPED_ACL, acl)
        acl.chmod(0o644)
        conf = self.folder / "mosquitto.conf"
        lines = [
            "per_listener_settings false",
            "allow_anonymous false",
            f"password_file {passwd}",
            f"acl_file {acl}",
            "persistence true" if self.persistence else "persistence false",
            f"persistence_location {self.folder}/",
            f"log_dest file {self.folder / 'mosquitto.log'}",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
            "max_queued_messages 100000",
            "set_tcp_nodelay true",
            f"listener {self.port} 127.0.0.1",
            f"listener {self.tls_port} 127.0.0.1",
            f"cafile {self.pki.ca_file}",
            f"certfile {self.pki.server_cert}",
            f"keyfile {self.pki.server_key}",
        ]
        if os.geteuid() == 0:
            lines.insert(0, "user root")
        conf.write_text("\n".join(lines) + "\n")
        return conf

    def start(self, timeout_s: float = 10.0) -> None:
        conf = self.folder / "mosquitto.conf"
        if not conf.exists():
            self.write_config()
        self.process = subprocess.Popen(
            ["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode() if self.process.stderr else ""
                raise RuntimeError(f"mosquitto exited: {err}\n{self.log}")
            if all(_listening(p) for p in (self.port, self.tls_port)):
                return
            time.sleep(0.02)
        raise RuntimeError(f"mosquitto did not listen within {timeout_s} s\n{self.log}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process.stderr is not None:
            self.process.stderr.close()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def mqtt_pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    if shutil.which("mosquitto") is None or shutil.which("openssl") is None:
        pytest.fail("mosquitto and openssl are needed: run ./dev setup (it installs them with apt)")
    folder = tmp_path_factory.mktemp("mqtt-pki")
    folder.chmod(0o755)
    return make_pki(folder)


@pytest.fixture
def broker(tmp_path: Path, mqtt_pki: Pki) -> Iterator[Broker]:
    folder = tmp_path / "broker"
    folder.mkdir()
    folder.chmod(0o755)
    tmp_path.chmod(0o755)
    instance = Broker(folder, mqtt_pki)
    instance.write_config()
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()
