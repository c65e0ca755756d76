"""Server restarts and API tokens: each test owns its server (the shared one must not die)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client

from .conftest import ConsoleWatch

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[LiveServer]:
    live = LiveServer(tmp_path / "data")
    live.start()
    yield live
    live.stop()


@pytest.fixture
def own_page(browser, console: ConsoleWatch) -> Iterator[Page]:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("console", console.on_console)
    page.on("pageerror", console.on_page_error)
    yield page
    context.close()
    assert console.unexpected() == [], f"console errors: {console.unexpected()}"


def test_page_recovers_from_a_server_restart_without_reload_or_loss(
    own_server: LiveServer, own_page: Page, console: ConsoleWatch
) -> None:
    console.allow_network_errors = True  # Chromium logs the refused reconnects while the server is down
    page = own_page
    with Client(own_server.url) as api:
        api.update_bot(
            "engineer", model_settings={"script": [{"match": "(?i)echo (.*)", "reply": "echo: {trigger}"}]}
        )
        thread = api.create_thread(title="Restart", participants=["you", "engineer"], default_bot="engineer")[
            "id"
        ]
        api.post_message(thread, "echo before")
        wait_until(lambda: len(api.messages(thread)) == 2, message="first reply")

    page.goto(f"{own_server.url}/#/t/{thread}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.locator("article.msg")).to_have_count(2)
    page.evaluate("window.__noReload = 'still here'")

    own_server.stop(kill=True)
    expect(page.locator("#conn")).to_have_attribute("data-state", "offline")
    own_server.start()
    with Client(own_server.url) as api:
        # Posted while the page is still disconnected (it retries with back-off).
        api.post_message(thread, "echo during recovery")
        expect(page.locator("#conn")).to_have_attribute("data-state", "live")
        expect(
            page.locator("article.msg[data-sender='engineer']", has_text="echo during recovery")
        ).to_be_visible()

        composer = page.get_by_role("combobox", name="Message")
        composer.fill("echo after")
        composer.press("Enter")
        expect(page.locator("article.msg[data-sender='engineer']", has_text="echo after")).to_be_visible()
        messages = wait_until(
            lambda: (ms := api.messages(thread)) and len(ms) >= 6 and ms, message="all replies"
        )

    assert page.evaluate("window.__noReload") == "still here"
    shown = page.locator("[data-message-id]").evaluate_all("els => els.map(e => e.dataset.messageId)")
    assert shown == [m["id"] for m in messages], "the page lost, duplicated or reordered messages"


def test_token_is_asked_once_and_kept(tmp_path: Path, browser, console: ConsoleWatch) -> None:  # type: ignore[no-untyped-def]
    with LiveServer(tmp_path / "data", token="s3cret-token") as server:
        context = browser.new_context()
        page = context.new_page()
        page.on("pageerror", console.on_page_error)
        try:
            page.goto(f"{server.url}/#/bots")
            dialog = page.get_by_role("dialog", name="API token")
            expect(dialog).to_be_visible()
            dialog.get_by_label("Token").fill("wrong")
            dialog.get_by_role("button", name="Connect").click()
            expect(dialog).to_contain_text("not accepted")
            dialog.get_by_label("Token").fill("s3cret-token")
            dialog.get_by_role("button", name="Connect").click()
            expect(page.locator(".bot-card[data-handle='engineer']")).to_be_visible()
            expect(page.locator("#conn")).to_have_attribute("data-state", "live")

            page.reload()
            expect(page.locator(".bot-card[data-handle='engineer']")).to_be_visible()
            expect(page.get_by_role("dialog", name="API token")).to_be_hidden()
        finally:
            context.close()
    # 401s are expected console noise here; uncaught page errors are not.
    assert [e for e in console.errors if e.startswith("pageerror")] == []
