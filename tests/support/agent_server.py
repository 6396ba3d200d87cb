"""Real HTTP peers for agent tests: the example agent server and ad-hoc aiohttp apps,
started in-process on an ephemeral loopback port (in the test's loop, or in a thread)."""

from __future__ import annotations

import asyncio
import importlib.util
import ssl
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from aiohttp import web

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_server.py"


def example_module() -> ModuleType:
    """``examples/agent_server.py`` imported as the module ``agent_server``."""
    if "agent_server" in sys.modules:
        return sys.modules["agent_server"]
    spec = importlib.util.spec_from_file_location("agent_server", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["agent_server"] = module
    spec.loader.exec_module(module)
    return module


@asynccontextmanager
async def serve(app: web.Application, *, ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """Run ``app`` on 127.0.0.1 (ephemeral port) in this loop; yield its base URL."""
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    host, port = runner.addresses[0][:2]
    scheme = "https" if ssl_context else "http"
    try:
        yield f"{scheme}://{host}:{port}"
    finally:
        await runner.cleanup()


@dataclass
class RunningExample:
    url: str  # base URL: /agent, /v1, /api/chat, /api/conversation/process
    app: web.Application

    @property
    def state(self) -> Any:
        return self.app[example_module().STATE]


@asynccontextmanager
async def example_server(**options: Any) -> AsyncIterator[RunningExample]:
    """The example agent server in this loop; ``options`` go to ``make_app``."""
    app = example_module().make_app(**options)
    async with serve(app) as url:
        yield RunningExample(url, app)


class ThreadedExample:
    """The example server on its own loop in a thread (for sync callers and e2e tests)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.running: RunningExample | None = None
        self._thread = threading.Thread(target=self._run, name="agent-server", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with example_server(**self._options) as running:
            self.running = running
            self._ready.set()
            await self._stop.wait()

    def start(self) -> RunningExample:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the example agent server did not start")
        assert self.running is not None
        return self.running

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self._loop.close()


def run_in_thread(**options: Any) -> ThreadedExample:
    """Start the example server in a thread; call ``.stop()`` when done."""
    server = ThreadedExample(**options)
    server.start()
    return server
