"""The Automations page in headless Chromium against a real ``openbot serve``: create, list with
the next run, disable and enable, run now and see the history, edit, delete."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Route, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from live_server import LiveServer, wait_until
from openbot.client import Client

from .conftest import ConsoleWatch

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_automations_page_creates_toggles_runs_edits_and_deletes(
    page: Page, server: LiveServer, api: Client, console: ConsoleWatch
) -> None:
    console.allow("status of 422")  # the bad cron below, refused on purpose
    thread = api.create_thread(title="Standups", participants=["you", "qa"])["id"]
    page.goto(f"{server.url}/#/automations")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.get_by_role("link", name="Automations")).to_have_attribute("aria-current", "page")
    expect(page.get_by_text("No automations yet.")).to_be_visible()

    page.get_by_role("button", name="New automation").click()
    dialog = page.get_by_role("dialog", name="New automation")
    dialog.get_by_label("Bot").select_option("qa")
    dialog.get_by_label("Title").fill("Daily standup")
    dialog.get_by_label("Content").fill("@qa post the standup notes")
    dialog.get_by_label("Cron").fill("bad cron")
    dialog.get_by_role("button", name="Create").click()
    expect(dialog.get_by_role("alert")).to_contain_text("not a 5-field cron expression")
    dialog.get_by_label("Cron").fill("30 8 * * *")
    dialog.get_by_label("Time zone").fill("Europe/Paris")
    dialog.get_by_label("Thread").select_option(thread)
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()

    [made] = api.automations()
    assert made["cron"] == "30 8 * * *" and made["timezone"] == "Europe/Paris" and made["thread_id"] == thread
    row = page.locator(f'tr[data-id="{made["id"]}"]')
    expect(row).to_contain_text("Daily standup")
    expect(row).to_contain_text("30 8 * * * (Europe/Paris)")
    expect(row.locator("td.next-run time")).to_have_attribute("datetime", made["next_run_at"])

    row.get_by_role("checkbox").uncheck()
    wait_until(lambda: api.automations()[0]["enabled"] is False, message="disabled")
    expect(row.locator("td.next-run")).to_have_text("off")
    row.get_by_role("checkbox").check()
    wait_until(lambda: api.automations()[0]["next_run_at"] is not None, message="enabled again")

    row.get_by_role("button", name="Run now").click()
    expect(page).to_have_url(re.compile(f"#/automations/{made['id']}$"))
    history = page.get_by_role("list", name="History")
    expect(history.locator("li.occurrence")).to_have_count(1)
    expect(history.locator("li.occurrence").first).to_contain_text("fired")
    expect(history.locator("li.occurrence").first).not_to_contain_text(
        "scheduled for"
    )  # run now: off schedule
    expect(history.get_by_role("link", name="Standups")).to_have_attribute("href", f"#/t/{thread}")
    posted = [m for m in api.messages(thread) if m["metadata"].get("automation_id") == made["id"]]
    assert [m["content"] for m in posted] == ["@qa post the standup notes"]
    expect(row).not_to_contain_text("never")  # last run shown
    page.get_by_role("link", name="Standups").click()
    tag = page.locator(f'article.msg[data-message-id="{posted[0]["id"]}"] a.msg-automation')
    expect(tag).to_have_attribute("href", f"#/automations/{made['id']}")
    tag.click()
    expect(page.get_by_role("heading", name="History: Daily standup")).to_be_visible()

    row.get_by_role("button", name="Edit").click()
    editor = page.get_by_role("dialog", name="Edit automation")
    expect(editor.get_by_label("Content")).to_have_value("@qa post the standup notes")
    editor.get_by_label("Content").fill("@qa standup, please")
    editor.get_by_role("button", name="Save").click()
    expect(editor).to_be_hidden()
    wait_until(lambda: api.automations()[0]["content"] == "@qa standup, please", message="edited")

    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_text("No automations yet.")).to_be_visible()
    assert api.automations() == []


def test_a_heartbeat_is_created_from_the_page_with_its_default_prompt(
    page: Page, server: LiveServer, api: Client
) -> None:
    page.goto(f"{server.url}/#/automations")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    page.get_by_role("button", name="New automation").click()
    dialog = page.get_by_role("dialog", name="New automation")
    dialog.get_by_label("Bot").select_option("engineer")
    dialog.get_by_label("Kind").select_option("heartbeat")
    dialog.get_by_label("Cron").fill("*/30 * * * *")
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()
    [beat] = [a for a in api.automations() if a["kind"] == "heartbeat"]
    assert beat["bot"] == "engineer" and beat["content"].startswith("Heartbeat:")
    row = page.locator(f'tr[data-id="{beat["id"]}"]')
    expect(row).to_contain_text("heartbeat")
    expect(row).to_contain_text("*/30 * * * * (UTC)")


def test_deleting_waits_for_a_load_under_way_so_it_never_asks_for_a_deleted_history(
    page: Page, server: LiveServer, api: Client, console: ConsoleWatch
) -> None:
    """A reload the live feed started, still reading the list when Delete is pressed, must not go
    on to ask for the deleted automation's history (a 404 in the console): the deletion waits."""
    made = api.create_automation(bot="qa", title="Weekly retro", content="@qa retro", cron="0 16 * * 5")
    page.goto(f"{server.url}/#/automations/{made['id']}")
    expect(page.get_by_role("heading", name="History: Weekly retro")).to_be_visible()

    held: list[Route] = []
    # Only the first list request is held; any later one goes through.
    page.route("**/api/v1/automations", lambda route: route.continue_() if held else held.append(route))
    log: list[str] = []
    page.on("request", lambda r: log.append(f"{r.method} {r.url.split('/api/v1', 1)[-1]}"))
    with page.expect_request(lambda r: r.method == "GET" and r.url.endswith("/api/v1/automations")):
        api.update_automation(made["id"], title="Weekly retro, Fridays")  # the feed reloads the page
    while not held:
        page.wait_for_timeout(10)  # lets Playwright hand the held request to the handler above

    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Delete").click()
    # The deletion must wait for the held load. Waiting a while for its request is the only way to
    # see that it does not go out; had it gone out, this returns at once and the check below fails.
    try:
        page.wait_for_event("request", lambda r: r.method == "DELETE", timeout=1000)
    except PlaywrightTimeout:
        pass
    assert f"DELETE /automations/{made['id']}" not in log, log
    held[0].continue_()
    page.unroute("**/api/v1/automations")

    expect(page.locator(f'tr[data-id="{made["id"]}"]')).to_have_count(0)
    expect(page).to_have_url(re.compile("#/automations$"))
    assert made["id"] not in [a["id"] for a in api.automations()]
    deleted_at = log.index(f"DELETE /automations/{made['id']}")
    assert not [r for r in log[deleted_at:] if "/occurrences" in r], log


def test_a_list_that_failed_to_load_is_not_shown_as_empty(
    page: Page, server: LiveServer, api: Client, console: ConsoleWatch
) -> None:
    console.allow("status of 503")  # the browser's own log of the refused request
    made = api.create_automation(bot="qa", title="Nightly", content="@qa nightly", cron="0 2 * * *")
    page.route(
        "**/api/v1/automations",
        lambda route: route.fulfill(
            status=503,
            content_type="application/json",
            body='{"error": {"code": "internal", "message": "down"}}',
        ),
    )
    page.goto(f"{server.url}/#/automations/{made['id']}")
    expect(page.locator(".automations [role=status]")).to_contain_text("Could not load")
    expect(page.get_by_text("No automations yet.")).to_have_count(0)  # it would read as deleted
    expect(page.get_by_text(f"No automation {made['id']}")).to_have_count(0)
    page.unroute("**/api/v1/automations")
    page.reload()
    expect(page.locator(f'tr[data-id="{made["id"]}"]')).to_contain_text("Nightly")
