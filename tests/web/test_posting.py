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


def test_the_composer_says_who_a_post_without_a_mention_reaches_as_the_server_routes_it(
    page: Page, server: LiveServer, api: Client
) -> None:
    task = api.create_thread(title="Hints", participants=["you", "engineer", "qa"], default_bot="engineer")[
        "id"
    ]
    open_app(page, server, f"/t/{task}")
    hint = page.locator(".composer-hint")
    expect(hint).to_contain_text("To @engineer (default)")  # before anything is typed
    api.update_bot("engineer", enabled=False)  # the server passes a disabled default bot over
    expect(hint).to_contain_text("To @qa (@engineer is disabled)")  # the thread's only other bot
    composer = page.get_by_role("combobox", name="Message")
    composer.fill("who takes this?")
    composer.press("Enter")
    wait_until(
        lambda: any(m["sender"] and m["sender"]["handle"] == "qa" for m in api.messages(task)),
        message="the hint named the bot that answered",
    )
    api.update_bot("engineer", enabled=True)

    channel = api.create_thread(title="Room", kind="channel", participants=["you", "engineer", "qa"])["id"]
    open_app(page, server, f"/t/{channel}")
    expect(hint).to_contain_text("No @mention: each bot here decides whether it is meant for it")
    expect(hint).not_to_contain_text("chief_of_staff")
    api._request("PATCH", f"/threads/{channel}", json={"require_mention": True})
    expect(hint).to_contain_text("Only an @mention wakes a bot here")

    composer.fill("@nobodyx hello")
    composer.press("Enter")
    expect(page.locator(".composer-notice")).to_contain_text(
        "@nobodyx is not a member. The message reached no bot."
    )
