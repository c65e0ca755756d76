"""Explanations in headless Chromium against a real ``openbot serve``: a message's "who saw this"
lists each bot's disposition, and a bot's avatar in the thread header answers "why didn't @x
answer?" for the latest message from a person."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_who_saw_this_and_why_didnt_a_bot_answer(page: Page, server: LiveServer, api: Client) -> None:
    api.script_bot("qa", [{"match": ".", "reply": "Suite is green."}])
    thread = api.create_thread(title="Release check", participants=["you", "qa", "reviewer"])["id"]
    posted = api.post_message(thread, "@qa run the suite please")
    message_id = posted["message"]["id"]
    wait_until(lambda: any(m["sender"] and m["sender"]["handle"] == "qa" for m in api.messages(thread)))

    page.goto(f"{server.url}/#/t/{thread}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    message = page.locator(f"#m-{message_id}")
    expect(message).to_contain_text("run the suite")
    message.get_by_role("button", name="who saw this").click()
    seen = message.get_by_role("region", name="Who saw this")
    expect(seen.locator("li.seen-item")).to_have_count(2)
    qa = seen.locator("li[data-bot='qa']")
    expect(qa).to_contain_text("engage")
    expect(qa).to_contain_text("tier 0 · mention")
    expect(seen.locator("li[data-bot='reviewer']")).to_contain_text("observe")

    page.locator(".presence button[data-handle='reviewer']").click()
    why = page.locator(".why-panel")
    expect(why).to_contain_text("Why didn't @reviewer answer?")
    expect(why.locator(".why-answer")).to_have_attribute("data-answer", "observed")
    expect(why).to_contain_text("run the suite please")

    page.locator(".presence button[data-handle='qa']").click()
    expect(why.locator(".why-answer")).to_have_attribute("data-answer", "answered")
    expect(why.locator(".why-head")).to_have_text("@qa answered×")  # not "why didn't it answer?"
    expect(why.get_by_role("link", name="See the reply")).to_be_visible()


def test_a_thread_that_does_not_exist_offers_no_composer(page: Page, server: LiveServer, console) -> None:  # type: ignore[no-untyped-def]
    console.allow("status of 404")  # the browser's own log of the missing thread
    page.goto(f"{server.url}/#/t/thr_nosuchthread")
    expect(page.get_by_text("This thread does not exist (or was deleted).")).to_be_visible()
    expect(page.get_by_role("combobox", name="Message")).to_be_hidden()


def test_channel_mention_switch_and_bot_aliases(page: Page, server: LiveServer, api: Client) -> None:
    thread = api.create_thread(title="General", kind="channel", participants=["you", "engineer", "qa"])["id"]
    page.goto(f"{server.url}/#/t/{thread}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    switch = page.get_by_label("mention required")
    expect(switch).not_to_be_checked()
    switch.check()
    wait_until(lambda: api.thread(thread)["require_mention"] is True, message="require_mention saved")

    page.goto(f"{server.url}/#/bots/qa")
    editor = page.get_by_role("form", name="@qa")
    editor.get_by_label("Aliases").fill("tester, the checker")
    editor.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").filter(has_text="Saved @qa")).to_be_visible()
    assert api.bot("qa")["aliases"] == ["tester", "the checker"]
