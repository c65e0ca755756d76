"""Fixtures for the browser tests: a real ``openbot serve`` and Debian's Chromium (headless)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from live_server import LiveServer
from openbot.client import Client

CHROMIUM = os.environ.get("OPENBOT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--disable-sync",
]
# Chromium reports a refused connection as a console error; the restart test expects those.
NETWORK_NOISE = (
    "net::ERR_CONNECTION_REFUSED",
    "net::ERR_EMPTY_RESPONSE",
    "net::ERR_CONNECTION_RESET",
    "net::ERR_INCOMPLETE_CHUNKED_ENCODING",
    "net::ERR_NETWORK_CHANGED",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live = LiveServer(tmp_path_factory.mktemp("openbot-web"))
    live.start()
    yield live
    live.stop()


@pytest.fixture
def api(server: LiveServer) -> Iterator[Client]:
    with Client(server.url, server.token) as client:
        yield client


# Package-scoped: Playwright's sync API keeps an event loop running on the main thread while it
# is open, which would break the asyncio tests of a run that goes on past tests/web.
@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not installed at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class ConsoleWatch:
    """Collects console errors and uncaught page errors; tests assert there are none."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.allow_network_errors = False
        self.allowed: list[str] = []

    def allow(self, fragment: str) -> None:
        """Expect console errors containing ``fragment`` (e.g. the browser's own log of a 422)."""
        self.allowed.append(fragment)

    def on_console(self, message: object) -> None:
        if getattr(message, "type", "") == "error":
            self.errors.append(str(getattr(message, "text", message)))

    def on_page_error(self, error: object) -> None:
        self.errors.append(f"pageerror: {error}")

    def unexpected(self) -> list[str]:
        out = []
        for text in self.errors:
            if self.allow_network_errors and (
                any(n in text for n in NETWORK_NOISE) or "Failed to load resource" in text
            ):
                continue
            if any(fragment in text for fragment in self.allowed):
                continue
            out.append(text)
        return out


@pytest.fixture
def console() -> ConsoleWatch:
    return ConsoleWatch()


@pytest.fixture
def page(browser, server: LiveServer, console: ConsoleWatch):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("console", console.on_console)
    page.on("pageerror", console.on_page_error)
    yield page
    context.close()
    assert console.unexpected() == [], f"console errors: {console.unexpected()}"
