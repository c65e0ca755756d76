"""Dropped triggers (#/disposals, reached from Activity) in headless Chromium against a real
``openbot serve``: a bot whose mailbox is full sheds the oldest channel messages, and the page
says which bot, why, with the numbers, and filters by reason and bot."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client

from .conftest import ConsoleWatch

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_shed_message_is_explained_on_the_dropped_triggers_page(
    page: Page, server: LiveServer, api: Client, console: ConsoleWatch
) -> None:
    api._request("POST", "/bots", json={"handle": "pager", "model": "scripted"})
    api.update_bot("pager", model_settings={"script": [], "delay_ms": 60_000})  # busy until cancelled
    room = api.create_thread(title="Ops room", kind="channel", participants=["you", "pager"])["id"]
    api.post_message(room, "@pager first")
    wait_until(lambda: any(r["status"] == "running" for r in server.runs(bot="pager")), message="pager busy")
    (busy,) = server.runs(bot="pager")
    for text in ("@pager second", "@pager third", "@pager fourth"):  # three wait while it runs
        api.post_message(room, text)
    # Then the bound drops to one: the next maintenance pass sheds the two oldest in one go (with
    # the bound set first, a pass between two posts could shed them one at a time).
    api.update_bot("pager", max_queued=1)
    wait_until(lambda: api._request("GET", "/disposals")["items"], message="a disposal")
    api.update_bot("pager", model_settings={"script": []})  # the kept message is answered at once
    api.cancel(busy["id"])

    page.goto(f"{server.url}/#/activity")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    page.get_by_role("link", name="Dropped triggers").click()
    expect(page.get_by_role("heading", name="Dropped triggers")).to_be_visible()
    row = page.locator("tr[data-reason=shed]")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("@pager")
    expect(row).to_contain_text("Shed")
    expect(row).to_contain_text("@pager's mailbox was full (3 queued, limit 1): 2 messages dropped")
    expect(row.get_by_role("link", name="Ops room")).to_have_attribute("href", f"#/t/{room}")

    page.get_by_label("Reason").select_option("stale")
    expect(page.get_by_text("Nothing was dropped.")).to_be_visible()
    assert "reason=stale" in page.url
    page.get_by_label("Reason").select_option("")
    page.get_by_label("Bot", exact=True).select_option("pager")
    expect(page.locator("tr[data-reason=shed]")).to_have_count(1)
    assert "bot=pager" in page.url


def test_the_bot_editor_sets_the_mailbox_limit_and_the_run_time_limit(
    page: Page, server: LiveServer, api: Client, console: ConsoleWatch
) -> None:
    page.goto(f"{server.url}/#/bots/qa")
    editor = page.locator("form.bot-editor")
    expect(editor.get_by_label("Mailbox limit")).to_have_value("200")
    expect(editor.get_by_label("Run time limit (seconds)")).to_have_value("")
    editor.get_by_label("Mailbox limit").fill("25")
    editor.get_by_label("Run time limit (seconds)").fill("120")
    editor.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").filter(has_text="Saved @qa")).to_be_visible()
    bot = api.bot("qa")
    assert bot["max_queued"] == 25 and bot["model_settings"]["run_timeout_seconds"] == 120
    editor.get_by_label("Run time limit (seconds)").fill("")
    editor.get_by_role("button", name="Save").click()
    wait_until(lambda: "run_timeout_seconds" not in api.bot("qa")["model_settings"], message="limit cleared")
