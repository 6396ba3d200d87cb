"""A real Home Assistant for the ``homeassistant`` tests: its own venv, loopback only.

``./dev test-ha`` makes the venv (HA 2025.4.4 on pyenv's Python 3.13.0, installed with HA's
own package_constraints.txt and the requirements of the integrations used here) and
points ``EDGEVOICE_HA_VENV`` at it. HA starts with ``--skip-pip`` (nothing is fetched),
``http`` on 127.0.0.1, is onboarded through the REST API (the user step only: the
core_config step would add integrations that need the internet), and integrations are
added through the config-flow REST API, as the UI does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

CLIENT_ID = "http://127.0.0.1/"


def ha_python() -> Path:
    venv = os.environ.get("EDGEVOICE_HA_VENV", str(Path(__file__).resolve().parents[2] / ".ha-venv"))
    python = Path(venv) / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no Home Assistant venv at {venv}: run ./dev test-ha")
    return python


@dataclass
class HomeAssistant:
    url: str
    config_dir: Path
    token: str = ""

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def call(self, method: str, path: str, body: Any = None, timeout_s: float = 60) -> Any:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session, \
                session.request(method, self.url + path, json=body, headers=self.headers) as response:
            text = await response.text()
            assert response.status < 400, f"{method} {path}: HTTP {response.status}: {text}"
            return await response.json() if text else None

    async def onboard(self) -> None:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{self.url}/api/onboarding/users", json={
                    "client_id": CLIENT_ID, "name": "Test", "username": "test", "password": "test-pass-1",
                    "language": "en"}) as response:
                code = (await response.json())["auth_code"]
            async with session.post(f"{self.url}/auth/token", data={
                    "grant_type": "authorization_code", "code": code, "client_id": CLIENT_ID}) as response:
                self.token = (await response.json())["access_token"]

    async def add_integration(self, domain: str, answers: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Run ``domain``'s config flow, answering each form by its step id."""
        result = await self.call("POST", "/api/config/config_entries/flow", {"handler": domain})
        for _ in range(6):
            if result["type"] != "form":
                return dict(result)
            step = result["step_id"]
            assert step in answers, f"unexpected config-flow step {step!r}: {result}"
            result = await self.call("POST", f"/api/config/config_entries/flow/{result['flow_id']}",
                                     answers[step])
        raise AssertionError(f"the {domain} config flow did not finish: {result}")

    async def states(self) -> list[dict[str, Any]]:
        return list(await self.call("GET", "/api/states"))

    def log(self) -> str:
        path = self.config_dir / "home-assistant.log"
        return path.read_text(errors="replace") if path.exists() else ""


CONFIG = """
homeassistant:
  name: edgevoice test
  internal_url: "{url}"
  time_zone: UTC
  unit_system: metric
http:
  server_host: 127.0.0.1
  server_port: {port}
api:
assist_pipeline:
conversation:
intent:
logger:
  default: info
"""


@contextlib.asynccontextmanager
async def running_home_assistant(tmp_path: Path, port: int) -> AsyncIterator[HomeAssistant]:
    python = ha_python()
    config_dir = tmp_path / "ha"
    config_dir.mkdir()
    url = f"http://127.0.0.1:{port}"
    (config_dir / "configuration.yaml").write_text(CONFIG.format(url=url, port=port))
    log = (config_dir / "stdout.log").open("w")
    process = subprocess.Popen(  # noqa: ASYNC220 (started once; it runs beside the test)
        [str(python), "-m", "homeassistant", "-c", str(config_dir), "--skip-pip"],
        stdout=log, stderr=subprocess.STDOUT)
    ha = HomeAssistant(url, config_dir)
    try:
        deadline = time.monotonic() + 300
        while True:
            assert process.poll() is None, f"Home Assistant exited: {(config_dir / 'stdout.log').read_text()}"
            assert time.monotonic() < deadline, "Home Assistant did not start within 300 s"
            try:
                async with aiohttp.ClientSession() as session, \
                        session.get(f"{url}/api/onboarding") as response:
                    if response.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(1.0)
        await ha.onboard()
        yield ha
    finally:
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, 60)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
