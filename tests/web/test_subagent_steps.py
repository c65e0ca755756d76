"""The run card nests a sub-agent's steps under the spawn_agent call that ran it (headless Chromium)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TODO = {"name": "todo_write", "args": {"todos": [{"content": "write the notes", "status": "pending"}]}}


def test_run_card_nests_a_sub_agents_steps(page: Page, server: LiveServer, api: Client) -> None:
    spawn = {"name": "spawn_agent", "args": {"task": "note it down", "tools": ["todo_write"]}}
    api.update_bot(
        "qa",
        model="scripted",
        tools=["spawn_agent"],
        model_settings={
            "script": [{"match": "delegate", "tool_calls": [spawn], "reply": "Sub-agent: {tool_result}"}],
            "subagent_script": [{"match": "note", "tool_calls": [TODO], "reply": "noted ({tool_result})"}],
        },
    )
    thread = api.create_thread(title="Delegation", participants=["you", "qa"], default_bot="qa")["id"]
    api.post_message(thread, "@qa delegate the notes")
    wait_until(
        lambda: next((r for r in api.runs(thread_id=thread) if r["status"] == "completed"), None),
        message="the qa run",
    )
    page.goto(f"{server.url}/#/t/{thread}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")

    run = page.locator(".run[data-status='completed']")
    run.locator("summary", has_text="Details").click()  # a finished run's steps load on opening
    expect(run.locator(".run-meta")).to_contain_text("1 tool call · 1 sub-agent")
    own = run.locator(".run-details-body > ol.steps > li.step")
    expect(own).to_have_count(3)  # spawn_agent's call, its result, the reply
    spawn_step = own.nth(0)
    expect(spawn_step.locator("> details .step-type")).to_have_text("call spawn_agent")
    nested = spawn_step.get_by_role("group", name="Steps of sub-1")
    expect(nested.locator(".subagent-head")).to_contain_text("sub-1 · 2 steps")
    expect(nested.locator("li.step .step-type")).to_have_text(["call todo_write", "result todo_write"])
    expect(own.nth(1).locator(".step-type")).to_have_text("result spawn_agent")
    expect(page.locator(".msg-content", has_text="Sub-agent: noted (Saved 1 todo(s)")).to_be_visible()
