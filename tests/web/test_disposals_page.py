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
    api.update_bot("pager", max_queued=1, model_settings={"script": [], "delay_ms": 700})
    room = api.create_thread(title="Ops room", kind="channel", participants=["you", "pager"])["id"]
    api.post_message(room, "@pager first")
    wait_until(lambda: any(r["status"] == "running" for r in server.runs(bot="pager")), message="pager busy")
    for text in ("@pager second", "@pager third", "@pager fourth"):  # three wait behind a bound of one
        api.post_message(room, text)
    wait_until(lambda: api._request("GET", "/disposals")["items"], message="a disposal")

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
