"""The Memory tab's upkeep buttons (Decay now, Consolidate now) in headless Chromium."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer
from openbot.client import Client

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_decay_and_consolidate_now_from_the_memory_tab(page: Page, server: LiveServer, api: Client) -> None:
    base = "/bots/reviewer/memories"
    old = (datetime.now(UTC) - timedelta(days=60)).isoformat()
    imported = {"content": "Lunch is at noon", "tier": "short", "last_accessed_at": old, "created_at": old}
    faded = api._request("POST", base, json=imported)
    first = api._request("POST", base, json={"content": "Deploys go through CI first"})
    second = api._request("POST", base, json={"content": "Deploys always go through CI first"})
    merge = {"action": "merge", "match": "CI first", "content": "Every deploy goes through CI"}
    merge["reason"] = "same"
    api.update_bot("reviewer", model="scripted", model_settings={"script": [], "consolidation": [merge]})

    page.goto(f"{server.url}/#/bots/reviewer/memory")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    items = page.locator(".memory-item")
    expect(items).to_have_count(3)
    report = page.locator(".upkeep-report")

    page.get_by_role("button", name="Decay now").click()
    expect(report).to_contain_text("0 archived (score below 0.15), 1 deleted (below 0.05)")
    expect(items).to_have_count(2)
    expect(items.filter(has_text="Lunch")).to_have_count(0)

    page.get_by_role("button", name="Consolidate now").click()
    expect(report).to_contain_text("Consolidation: 1 change(s), 0 kept.")
    decision = report.get_by_role("list", name="Consolidation decisions").locator("li")
    expect(decision).to_have_count(1)
    expect(decision).to_have_attribute("data-action", "merge")
    expect(decision).to_contain_text("same")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Every deploy goes through CI")
    page.get_by_label("Lifecycle").select_option("archived")
    expect(items).to_have_count(2)

    left = {m["id"]: m for m in api._request("GET", base, params={"lifecycle": "all"})["items"]}
    assert faded["id"] not in left
    assert left[first["id"]]["lifecycle"] == left[second["id"]]["lifecycle"] == "archived"
    (merged,) = [m for m in left.values() if m["lifecycle"] == "active"]
    assert merged["supersedes"] in (first["id"], second["id"]) and merged["source"] == "consolidation"
    events = [a["event"] for a in api.activity(event="memory.")]
    assert events.count("memory.pruned") == 1 and events.count("memory.consolidated") == 1

    page.goto(f"{server.url}/#/activity?event=memory.")
    rows = page.locator(".activity-table tbody tr[data-id]")
    expect(rows.filter(has_text="memory.consolidated")).to_have_count(1)
    expect(rows.filter(has_text="memory.pruned")).to_have_count(1)
    expect(rows.filter(has_text="memory.archived")).to_have_count(2)
