"""A throw-away CA certificate made with openssl, for provisioning and doctor tests."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_ca(directory: Path, name: str = "edgevoice-test-ca") -> str:
    """Create ``ca.key``/``ca.pem`` in ``directory``; return the PEM text."""
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", f"/CN={name}", "-keyout", str(directory / "ca.key"), "-out", str(directory / "ca.pem")],
        check=True, capture_output=True,
    )
    return (directory / "ca.pem").read_text()
