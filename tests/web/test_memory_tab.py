"""The Memory tab of a bot's page and the run card's "What the model saw", in headless Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import ApiError, Client

from .conftest import ConsoleWatch

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def open_app(page: Page, server: LiveServer, route: str) -> None:
    page.goto(f"{server.url}/#{route}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")


def test_memory_tab_lists_searches_filters_adds_edits_archives_and_deletes(
    page: Page, server: LiveServer, api: Client, console: ConsoleWatch
) -> None:
    console.allow("status of 422")  # the refused importance, as the browser logs it
    base = "/bots/qa/memories"
    api._request("POST", base, json={"content": "Releases are cut on Tuesdays", "segment": "project"})
    api._request("POST", base, json={"content": "Maria prefers terse bug reports", "segment": "preference"})
    open_app(page, server, "/bots/qa/memory")

    tab = page.get_by_role("tab", name="Memory")
    expect(tab).to_have_attribute("aria-selected", "true")
    items = page.locator(".memory-item")
    expect(items).to_have_count(2)
    expect(page.get_by_role("heading", name="What @qa remembers")).to_be_visible()  # whose memory
    expect(page.locator(".memory-index")).to_contain_text("lexical")
    expect(items.first).to_contain_text("used 0× ")
    expect(items.first).to_contain_text("never used yet")  # not its creation time as a last use
    expect(items.first).not_to_contain_text("last used")

    page.get_by_label("Search memories").fill("when are releases cut?")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Tuesdays")
    expect(items.first).to_contain_text("score")
    expect(items.first).to_contain_text(re.compile(r"score (\d\.\d+e-\d+|0\.\d*[1-9])"))  # never 0.000
    page.get_by_label("Search memories").fill("")
    page.get_by_label("Segment").select_option("preference")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Maria")
    page.get_by_label("Segment").select_option("")
    expect(items).to_have_count(2)

    page.get_by_role("button", name="Add memory").click()
    form = page.get_by_role("form", name="Add memory")
    form.get_by_label("Content").fill("The staging database is called qa-db")
    form.get_by_label("Tier").select_option("permanent")
    form.get_by_label("Importance").fill("1.5")  # refused: shown, nothing written
    form.get_by_role("button", name="Add").click()
    expect(form.locator(".form-error")).to_contain_text("importance")
    expect(items).to_have_count(2)
    form.get_by_label("Importance").fill("0.8")
    form.get_by_role("button", name="Add").click()
    expect(items).to_have_count(3)
    added = items.filter(has_text="qa-db")
    expect(added).to_contain_text("permanent")

    added.get_by_role("button", name="Edit").click()
    edit = page.get_by_role("form", name="Edit memory")
    edit.get_by_label("Content").fill("The staging database is called qa-db-2")
    edit.get_by_role("button", name="Save").click()
    expect(items.filter(has_text="qa-db-2")).to_have_count(1)

    items.filter(has_text="Tuesdays").get_by_role("button", name="Archive").click()
    expect(items).to_have_count(2)
    page.get_by_label("Lifecycle").select_option("archived")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Tuesdays")
    page.get_by_label("Lifecycle").select_option("active")
    expect(items).to_have_count(2)

    page.once("dialog", lambda dialog: dialog.accept())
    items.filter(has_text="Maria").get_by_role("button", name="Delete").click()
    expect(items).to_have_count(1)
    api._request("POST", base, json={"content": "Flaky tests are quarantined on sight"})  # elsewhere
    expect(items.filter(has_text="quarantined")).to_have_count(1)  # live, no reload
    api._request("DELETE", f"{base}/{items.filter(has_text='quarantined').get_attribute('data-id')}")
    expect(items).to_have_count(1)
    left = api._request("GET", base, params={"lifecycle": "all"})["items"]
    assert sorted(m["content"] for m in left) == [
        "Releases are cut on Tuesdays",
        "The staging database is called qa-db-2",
    ]
    assert {m["content"]: m["tier"] for m in left}["The staging database is called qa-db-2"] == "permanent"


def test_run_card_details_show_what_the_model_saw(page: Page, server: LiveServer, api: Client) -> None:
    api._request(
        "POST", "/bots/reviewer/memories", json={"content": "Reviews need two approvals for payments code"}
    )
    api.script_bot("reviewer", [{"match": ".", "reply": "noted"}])
    thread = api.create_thread(title="Context", participants=["you", "reviewer"], default_bot="reviewer")[
        "id"
    ]
    api.post_message(thread, "@reviewer how many approvals does payments code need?")
    wait_until(
        lambda: next((r for r in api.runs(thread_id=thread) if r["status"] == "completed"), None),
        message="the reviewer's run",
    )
    open_app(page, server, f"/t/{thread}")

    run = page.locator(".run[data-status='completed']")
    run.locator("summary", has_text="Details").click()
    run.locator("summary", has_text="What the model saw").click()
    seen = run.locator(".run-context-body")
    expect(seen.locator(".context-memories li")).to_have_count(1)
    expect(seen.locator(".context-memories")).to_contain_text("two approvals")
    expect(seen.locator(".context-system")).to_contain_text(re.compile("What you have learned"))
    expect(seen.locator(".context-messages")).to_contain_text("how many approvals")


def test_a_running_run_shows_what_its_model_is_seeing(page: Page, server: LiveServer, api: Client) -> None:
    api.script_bot("reviewer", [], delay_ms=60_000)  # cancelled below, long before
    thread = api.create_thread(title="Slow", participants=["you", "reviewer"], default_bot="reviewer")["id"]
    api.post_message(thread, "@reviewer take your time with this one")
    run = wait_until(
        lambda: next((r for r in api.runs(thread_id=thread) if r["status"] == "running"), None),
        message="the reviewer's run",
    )
    # Running from its claim; its context exists once it is prepared, a moment later.
    wait_until(lambda: _has_context(api, run["id"]), message="the run's context")
    try:
        open_app(page, server, f"/t/{thread}")
        card = page.locator(".run[data-status='running']")
        card.locator("summary", has_text="Details").click()
        card.locator("summary", has_text="What the model saw").click()
        expect(card.locator(".run-context-body .context-messages")).to_contain_text("take your time")
    finally:
        api.cancel(run["id"])


def _has_context(api: Client, run_id: str) -> bool:
    try:
        api._request("GET", f"/runs/{run_id}/context")
    except ApiError:
        return False
    return True
