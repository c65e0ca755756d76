"""The Drafts view in headless Chromium against a real ``openbot serve``: a bot's pending draft is
listed (and in the inbox's Needs action), sent edited, another rejected with a reason, and the
Sent and Rejected tabs show who decided."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Route, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from live_server import LiveServer, wait_until
from openbot.client import Client

from .conftest import ConsoleWatch

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _draft_when_asked(api: Client, names: tuple[str, str] = ("one", "two")) -> None:
    def rule(name: str) -> dict[str, object]:
        args = {"title": f"Note {name}", "content": f"Hello, note {name}.", "target": {"actor": "you"}}
        call = {"name": "save_draft", "args": args}
        return {"match": f"draft {name}", "reply": "Saved it.", "tool_calls": [call]}

    api.update_bot("qa", tools=["save_draft"])
    api.script_bot("qa", [rule(name) for name in names])


def _pending_titles(api: Client) -> list[str]:
    return [d["title"] for d in api.drafts(status="pending")]


def test_drafts_view_sends_an_edited_draft_and_rejects_another(
    page: Page, server: LiveServer, api: Client, console: ConsoleWatch
) -> None:
    _draft_when_asked(api)
    thread = api.create_thread(title="Partner deal", participants=["you", "qa"])["id"]
    for ask in ("@qa draft one", "@qa draft two"):
        api.post_message(thread, ask)
        wait_until(lambda ask=ask: f"Note {ask[-3:]}" in _pending_titles(api), message=ask)

    page.goto(f"{server.url}/#/inbox/action")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.locator("#tab-action .count")).to_have_text(" 2")
    expect(page.locator("#nav-drafts-badge")).to_have_text("2")
    expect(page.get_by_role("list", name="Drafts to send or reject").locator("li.draft")).to_have_count(2)

    page.get_by_role("link", name="Drafts").click()
    expect(page.get_by_role("link", name="Drafts")).to_have_attribute("aria-current", "page")
    drafts = page.get_by_role("list", name="Drafts")
    expect(drafts.locator("li.draft")).to_have_count(2)
    one = drafts.locator("li.draft", has_text="Note one")
    expect(one).to_contain_text("to @you in Partner deal")
    one.get_by_label("Message").fill("Hello, edited by a person.")
    one.get_by_role("button", name="Send").click()
    expect(drafts.locator("li.draft")).to_have_count(1)

    two = drafts.locator("li.draft", has_text="Note two")
    two.get_by_label("Reason").fill("Not before the contract is signed")
    two.get_by_role("button", name="Reject").click()
    expect(page.get_by_text("No draft waits for you.")).to_be_visible()
    expect(page.locator("#nav-drafts-badge")).to_be_hidden()

    sent = [m for m in api.messages(thread) if m["metadata"].get("kind") == "draft"]
    assert [(m["sender"]["handle"], m["content"]) for m in sent] == [("qa", "Hello, edited by a person.")]
    notices = [m for m in api.messages(thread) if m["metadata"].get("kind") == "draft_rejected"]
    assert len(notices) == 1 and "Not before the contract is signed" in notices[0]["content"]

    page.get_by_role("tab", name="Sent").click()
    expect(drafts.locator("li.draft")).to_have_count(1)
    expect(drafts).to_contain_text("Sent by @you")
    page.get_by_role("tab", name="Rejected").click()
    expect(drafts).to_contain_text("Rejected by @you: Not before the contract is signed")
    assert api.drafts(status="pending") == []


def test_an_older_tab_answer_arriving_late_does_not_replace_the_tab_shown(
    page: Page, server: LiveServer, api: Client, console: ConsoleWatch
) -> None:
    """Pending's list, still on its way when Rejected is chosen, must not be drawn under Rejected."""
    _draft_when_asked(api, ("three", "four"))  # the server is shared
    thread = api.create_thread(title="Vendor", participants=["you", "qa"])["id"]
    api.post_message(thread, "@qa draft three")
    wait_until(lambda: _pending_titles(api) == ["Note three"], message="drafted")
    api.reject_draft(api.drafts(status="pending")[0]["id"], reason="Too early")
    api.post_message(thread, "@qa draft four")
    wait_until(lambda: _pending_titles(api) == ["Note four"], message="drafted again")

    held: list[Route] = []
    page.route("**/api/v1/drafts?status=pending*", lambda route: held.append(route))
    page.goto(f"{server.url}/#/drafts")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    drafts = page.get_by_role("list", name="Drafts")
    expect(page.get_by_role("tab", name="Rejected")).to_be_visible()
    while not held:
        page.wait_for_timeout(10)  # lets Playwright hand the held request to the handler above
    page.get_by_role("tab", name="Rejected").click()
    expect(drafts).to_contain_text("Rejected by @you: Too early")

    # Every pending list asked for so far (the page's, and the navigation badge's) is let go.
    for route in list(held):
        with page.expect_response(lambda r, url=route.request.url: r.url == url) as late:
            route.continue_()
        assert late.value.ok
    page.unroute("**/api/v1/drafts?status=pending*")
    # The late answer is drawn, if at all, as soon as it is read; give it that long to show.
    with pytest.raises(PlaywrightTimeout):
        drafts.get_by_text("Note four", exact=True).wait_for(timeout=1000)
    expect(drafts.locator("li.draft")).to_have_count(len(api.drafts(status="rejected")))
    expect(drafts).to_contain_text("Note three")
    expect(page.get_by_role("tab", name="Rejected")).to_have_attribute("aria-selected", "true")
