"""Debian's headless Chromium through chromium-driver, for the console's browser tests.

Selenium is told exactly where both are, and to stay offline, so Selenium Manager never
tries to download a browser or a driver. Calls block, so each runs in a worker thread:
the device under test keeps running in the test's event loop meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--window-size=1280,800",
         "--force-device-scale-factor=1", "--hide-scrollbars")

T = TypeVar("T")


class Browser:
    def __init__(self, driver: Any, profile: tempfile.TemporaryDirectory[str]) -> None:
        self.driver = driver
        self._profile = profile

    @classmethod
    async def start(cls) -> Browser:
        missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
        if missing:
            raise AssertionError(f"{', '.join(missing)} missing: ./dev setup installs chromium and "
                                 "chromium-driver")
        return await asyncio.to_thread(cls._start)

    @classmethod
    def _start(cls) -> Browser:
        os.environ["SE_OFFLINE"] = "true"  # Selenium Manager: never download anything
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        profile = tempfile.TemporaryDirectory(prefix="edgevoice-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (*FLAGS, f"--user-data-dir={profile.name}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        driver.set_page_load_timeout(30)
        return cls(driver, profile)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    async def get(self, url: str) -> None:
        await self.call(self.driver.get, url)

    async def script(self, source: str, *args: Any) -> Any:
        return await self.call(self.driver.execute_script, source, *args)

    async def text(self, css: str) -> str:
        return str(await self.script(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';", css))

    async def wait_for(self, what: str, check: Callable[[], Awaitable[Any]], timeout_s: float = 60.0) -> Any:
        """Poll the async ``check`` until it returns something truthy."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = await check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"the page never showed {what} within {timeout_s} s")
            await asyncio.sleep(0.1)

    async def wait_text(self, css: str, predicate: Callable[[str], bool], what: str,
                        timeout_s: float = 60.0) -> str:
        last: list[str] = []

        async def check() -> str | None:
            text = await self.text(css)
            last[:] = [text]
            return text if predicate(text) else None

        try:
            return str(await self.wait_for(what, check, timeout_s))
        except AssertionError as err:  # what the page showed instead says why
            raise AssertionError(f"{err}; {css} showed {last[0] if last else None!r}") from None

    async def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        ok = await self.call(self.driver.save_screenshot, str(path))
        assert ok, f"no screenshot written to {path}"

    async def new_tab(self) -> str:
        await self.call(self.driver.switch_to.new_window, "tab")
        return str(self.driver.current_window_handle)

    async def switch(self, handle: str) -> None:
        await self.call(self.driver.switch_to.window, handle)

    async def close(self) -> None:
        await asyncio.to_thread(self.driver.quit)
        self._profile.cleanup()
