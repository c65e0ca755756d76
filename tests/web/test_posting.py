"""The Inbox badge agrees with the Unread tab, and a post's unknown mentions are shown by the
composer (headless Chromium against a real ``openbot serve``; a server of its own, so the counts
are known)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def open_app(page: Page, server: LiveServer, route: str) -> None:
    page.goto(f"{server.url}/#{route}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")


def test_the_inbox_badge_counts_the_threads_the_unread_tab_lists(
    page: Page, server: LiveServer, api: Client
) -> None:
    unread = []
    for i, messages in enumerate((1, 3, 4)):  # 8 unread messages in 3 threads
        thread = api.create_thread(title=f"Unread {i}", participants=["you", "engineer"])["id"]
        for n in range(messages):
            api.post_message(thread, f"update {n}", sender="engineer")
        unread.append(thread)
    api.create_thread(title="Read", participants=["you", "engineer"])
    wait_until(lambda: sum(1 for t in api.threads() if t.get("unread")) == 3, message="3 unread threads")

    open_app(page, server, "/inbox/unread")
    expect(page.locator(".thread-row")).to_have_count(3)
    tab = page.get_by_role("tab", name=re.compile("Unread"))
    expect(tab.locator(".count")).to_have_text(" 3")
    badge = page.locator("#nav-inbox-badge")
    expect(badge).to_have_text("3")
    expect(badge).to_have_attribute("aria-label", "3 threads with unread messages")

    page.locator(f".thread-row[data-thread-id='{unread[1]}']").get_by_role("link").click()
    wait_until(lambda: api.thread(unread[1]).get("unread") == 0, message="thread acked")
    expect(badge).to_have_text("2")
    page.get_by_role("link", name=re.compile("^Inbox")).click()
    tab.click()
    expect(page.locator(".thread-row")).to_have_count(2)
    expect(tab.locator(".count")).to_have_text(" 2")


def test_an_unknown_mention_is_shown_by_the_composer_and_its_suggestion_fixes_the_draft(
    page: Page, server: LiveServer, api: Client
) -> None:
    thread = api.create_thread(title="Typos", participants=["you", "engineer"], default_bot="reviewer")["id"]
    open_app(page, server, f"/t/{thread}")
    composer = page.get_by_role("combobox", name="Message")
    composer.fill("@enginer please look at the build")
    expect(page.locator(".composer-hint")).to_contain_text("@enginer: no such member")
    composer.press("Enter")
    expect(composer).to_have_value("")
    notice = page.locator(".composer-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("@enginer is not a member — did you mean @engineer?")
    expect(notice).to_contain_text("The message reached no bot.")
    expect(page.locator("article.msg[data-sender='you']")).to_contain_text("please look at the build")

    notice.get_by_role("button", name="@engineer").click()
    expect(composer).to_have_value("@engineer please look at the build")
    expect(notice).to_be_hidden()

    composer.fill("ask @zzyzx")
    composer.press("Enter")
    expect(notice).to_contain_text("@zzyzx is not a member")
    expect(notice.get_by_role("button", name=re.compile("@"))).to_have_count(0)
    notice.get_by_role("button", name="Dismiss").click()
    expect(notice).to_be_hidden()
    assert api.runs(thread_id=thread) == []  # neither post was rerouted to @reviewer
