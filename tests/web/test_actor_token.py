"""A page opened with an actor token acts as that actor, and cannot pick another (headless
Chromium against a real ``openbot serve``)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client

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
