"""Skills from OPENBOT_SKILLS_DIR and a plugin's skills from OPENBOT_PLUGINS_DIR appear in the bots
editor's tool picker, and a bot given one there runs it as a sub-agent (headless Chromium)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SKILL = "---\ndescription: {what}\nallowed-tools: todo_write\n---\nWrite it down.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data = tmp_path_factory.mktemp("openbot-skills")
    (data / "skills" / "notes").mkdir(parents=True)
    (data / "skills" / "notes" / "SKILL.md").write_text(SKILL.format(what="Keeps notes."))
    plugin = data / "plugins" / "acme"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "acme"}))
    (plugin / "skills" / "review").mkdir(parents=True)
    (plugin / "skills" / "review" / "SKILL.md").write_text(SKILL.format(what="Reviews things."))
    env = {"OPENBOT_SKILLS_DIR": str(data / "skills"), "OPENBOT_PLUGINS_DIR": str(data / "plugins")}
    live = LiveServer(data, env=env)
    live.start()
    yield live
    live.stop()


def test_the_editor_lists_skills_and_a_bot_given_one_runs_it(
    page: Page, server: LiveServer, api: Client
) -> None:
    page.goto(f"{server.url}/#/bots/qa")
    picker = page.get_by_role("group", name="Tools")
    skills = picker.get_by_role("table", name="Skills")
    expect(skills.get_by_label("Use skill__notes")).not_to_be_checked()
    plugin = picker.get_by_role("table", name="Plugins and the tools directory: acme")
    expect(plugin.get_by_label("Use skill__acme__review")).to_be_visible()
    skills.get_by_label("Use skill__notes").check()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved @qa")).to_be_visible()
    assert "skill__notes" in api.bot("qa")["tools"]

    todo = {"name": "todo_write", "args": {"todos": [{"content": "a note", "status": "pending"}]}}
    call = {"name": "skill__notes", "args": {"task": "note this"}}
    settings = {
        "script": [{"match": "remember", "tool_calls": [call], "reply": "notes: {tool_result}"}],
        "subagent_script": [{"match": "note", "tool_calls": [todo], "reply": "{tool_result}"}],
    }
    api.update_bot("qa", model="scripted", model_settings=settings)
    thread = api.create_thread(title="Skills", participants=["you", "qa"], default_bot="qa")["id"]
    api.post_message(thread, "@qa remember this")
    wait_until(
        lambda: next((r for r in api.runs(thread_id=thread) if r["status"] == "completed"), None),
        message="the qa run",
    )
    page.goto(f"{server.url}/#/t/{thread}")
    expect(page.locator(".msg-content", has_text="notes: Saved 1 todo(s)")).to_be_visible()
    run = page.locator(".run[data-status='completed']")
    run.locator("summary", has_text="Details").click()
    expect(run.get_by_role("group", name="Steps of sub-1").locator(".step-type")).to_have_text(
        ["call todo_write", "result todo_write"]
    )
