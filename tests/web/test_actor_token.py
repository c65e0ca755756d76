"""A page opened with an actor token acts as that actor, and cannot pick another (headless
Chromium against a real ``openbot serve``)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client

from .conftest import ConsoleWatch

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_page_with_an_actor_token_posts_as_that_actor(page: Page, server: LiveServer, api: Client) -> None:
    for handle in ("alice", "bob"):  # two humans besides @you: the page would offer a choice
        api._request("POST", "/actors", json={"handle": handle, "kind": "human"})
    token = api._request("POST", "/actors/alice/tokens")["token"]
    thread = api.create_thread(title="Alice's thread", participants=["you", "alice", "engineer"])["id"]

    page.add_init_script(f"localStorage.setItem('openbot.token', {token!r})")
    page.goto(f"{server.url}/#/t/{thread}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.locator(".actor-pick")).to_be_hidden()  # nobody else to act as
    composer = page.get_by_role("combobox", name="Message")
    composer.fill("hello from the page")
    composer.press("Enter")
    wait_until(
        lambda: any(m["content"] == "hello from the page" for m in api.messages(thread)),
        message="the post arrived",
    )
    (posted,) = [m for m in api.messages(thread) if m["content"] == "hello from the page"]
    assert posted["sender"]["handle"] == "alice"


def test_a_page_with_an_actor_token_shows_bots_but_not_their_settings_or_memory(
    page: Page, server: LiveServer, api: Client
) -> None:
    """Changing a bot and a bot's memory are the admin's: the page says so instead of failing on save."""
    api._request("POST", "/actors", json={"handle": "carol", "kind": "human"})
    token = api._request("POST", "/actors/carol/tokens")["token"]
    page.add_init_script(f"localStorage.setItem('openbot.token', {token!r})")
    page.goto(f"{server.url}/#/bots/engineer")
    expect(page.locator(".bot-card[data-handle=engineer]")).to_be_visible()
    expect(page.get_by_role("button", name="New bot")).to_be_hidden()
    expect(page.locator(".bot-editor .admin-only")).to_contain_text("needs the admin token")
    expect(page.get_by_role("button", name="Save")).to_be_disabled()
    expect(page.get_by_role("button", name="Delete bot")).to_be_disabled()
    page.get_by_role("tab", name="Memory").click()
    expect(page.locator(".bot-tab-panel .admin-only")).to_contain_text(
        "@engineer's memory needs the admin token"
    )
    expect(page.get_by_role("searchbox", name="Search memories")).to_have_count(0)


def test_the_admin_page_still_edits_bots(page: Page, server: LiveServer) -> None:
    page.goto(f"{server.url}/#/bots/engineer")
    expect(page.get_by_role("button", name="Save")).to_be_enabled()
    expect(page.get_by_role("button", name="New bot")).to_be_visible()
    expect(page.locator(".admin-only")).to_have_count(0)


def test_a_revoked_token_ends_the_pages_stream_and_asks_for_a_new_one(
    page: Page, server: LiveServer, api: Client, console: ConsoleWatch
) -> None:
    console.allow("status of 401")  # the browser's own log of the refused request
    api._request("POST", "/actors", json={"handle": "dora", "kind": "human"})
    token = api._request("POST", "/actors/dora/tokens")["token"]
    thread = api.create_thread(title="Dora's thread", participants=["you", "dora"])["id"]
    page.add_init_script(
        f"localStorage.getItem('openbot.token') || localStorage.setItem('openbot.token', {token!r})"
    )
    page.goto(f"{server.url}/#/t/{thread}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")

    api._request("DELETE", "/actors/dora/tokens")
    expect(page.locator(".toast")).to_contain_text("token was revoked")
    dialog = page.get_by_role("dialog", name="API token")
    expect(dialog).to_contain_text("revoked")
    assert page.evaluate("localStorage.getItem('openbot.token')") is None  # the dead token is dropped

    fresh = api._request("POST", "/actors/dora/tokens")["token"]
    dialog.get_by_label("Token").fill(fresh)
    dialog.get_by_role("button", name="Connect").click()
    expect(page.get_by_role("heading", name="Dora's thread")).to_be_visible()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    assert page.evaluate("localStorage.getItem('openbot.token')") == fresh
