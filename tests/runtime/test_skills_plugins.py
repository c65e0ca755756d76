"""Skills (``SKILL.md``) and plugins (Claude Code layout) loaded from directories become sub-agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from conftest import Team
from openbot.runtime.commands import BotUpdate
from openbot.runtime.team import update_bot
from openbot.runtime.tools import subagents
from openbot.runtime.tools.extensions import add_extensions
from openbot.runtime.tools.plugins import load_plugins
from openbot.runtime.tools.skills import load_skills
from openbot.store.models import TodoList

NOTES = """---
name: notes
description: Keeps the team's todo list tidy.
allowed-tools: todo_write, run_shell, Read
---
Write every item as a todo.
"""
TODO = {"name": "todo_write", "args": {"todos": [{"content": "from the skill", "status": "pending"}]}}
SHELL = {"name": "run_shell", "args": {"command": "echo hi"}}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def _calls(team: Team, tools: list[str], tool: str, sub: list[dict[str, Any]]) -> tuple[Any, Any, str]:
    """@engineer, granted ``tools``, calls ``tool`` when asked; its sub-agents follow ``sub``."""
    parent = [
        {
            "match": "tidy",
            "tool_calls": [{"name": tool, "args": {"task": "tidy up"}}],
            "reply": "{tool_result}",
        }
    ]
    update = BotUpdate(
        model="scripted", tools=tools, model_settings={"script": parent, "subagent_script": sub}
    )
    async with team.rt.db.transaction() as s:
        await update_bot(s, "engineer", update)
    thread = await team.thread()
    await team.post(thread, "@engineer tidy the list")
    await team.idle()
    run = (await team.runs(thread))[0]
    return run, (await team.rt.runs.get(run.id))["events"], (await team.messages(thread))[-1]["content"]


async def test_a_skill_from_a_directory_is_a_sub_agent_with_its_allowed_tools(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts: list[str] = []
    real = subagents.create_agent

    def spy(*args: Any, **kwargs: Any) -> Any:
        prompts.append(kwargs["system_prompt"])
        return real(*args, **kwargs)

    monkeypatch.setattr(subagents, "create_agent", spy)
    write(tmp_path / "skills" / "notes" / "SKILL.md", NOTES)
    found = add_extensions(team.rt.tools, tmp_path / "skills", None)
    assert [s.name for s in found.skills] == ["notes"] and found.problems == []
    (entry,) = [e for e in team.rt.tools.entries() if e.name == "skill__notes"]
    assert (entry.source, entry.server) == ("skill", None)
    assert "Keeps the team's todo list tidy." in entry.tool.description
    run, events, reply = await _calls(
        team,
        ["skill__notes"],
        "skill__notes",
        [{"match": "tidy", "tool_calls": [TODO], "reply": "done: {tool_result}"}],
    )
    assert reply == "done: Saved 1 todo(s), 0 completed."
    assert prompts[0].endswith("\n\nWrite every item as a todo.")  # the body is its instructions
    assert [(e["type"], e["payload"].get("name"), e["payload"].get("agent")) for e in events[:3]] == [
        ("tool_call", "skill__notes", None),
        ("tool_call", "todo_write", "sub-1"),
        ("tool_result", "todo_write", "sub-1"),
    ]
    # run_shell is in allowed-tools, but the bot does not have it: the skill's sub-agent does not either.
    run, events, reply = await _calls(
        team,
        ["skill__notes"],
        "skill__notes",
        [{"match": "tidy", "tool_calls": [SHELL], "reply": "{tool_result}"}],
    )
    assert "not a valid tool" in reply and run.status == "completed"


async def test_a_bot_without_the_skill_cannot_call_it(team: Team, tmp_path: Path) -> None:
    write(tmp_path / "skills" / "notes" / "SKILL.md", NOTES)
    add_extensions(team.rt.tools, tmp_path / "skills", None)
    _run, _events, reply = await _calls(
        team, [], "skill__notes", [{"match": ".", "tool_calls": [TODO], "reply": "x"}]
    )
    assert "not a valid tool" in reply
    async with team.rt.db.read() as s:
        assert list(await s.scalars(select(TodoList))) == []


def test_skills_that_cannot_load_are_skipped_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(
        root / "ok" / "SKILL.md", "---\ndescription: fine\nallowed-tools: [list_bots, todo_write]\n---\nbody"
    )
    write(root / "bare" / "SKILL.md", "no front matter")
    write(root / "nodesc" / "SKILL.md", "---\nname: nodesc\n---\n")
    write(root / "badname" / "SKILL.md", "---\nname: a__b\ndescription: x\n---\n")
    write(root / "open" / "SKILL.md", "---\ndescription: x\n")
    write(root / "notes.txt", "not a skill directory")
    skills, problems = load_skills(root)
    assert [(s.name, s.allowed_tools, s.instructions) for s in skills] == [
        ("ok", ("list_bots", "todo_write"), "body")
    ]
    assert len(problems) == 4
    assert any("needs a description" in p for p in problems) and any("'a__b'" in p for p in problems)
    assert any("must start with front matter" in p for p in problems) and any(
        "not closed" in p for p in problems
    )
    assert load_skills(tmp_path / "missing") == ([], [])


def _plugin(root: Path) -> Path:
    plugin = root / "acme-dir"
    write(plugin / ".claude-plugin" / "plugin.json", json.dumps({"name": "acme", "version": "1.2.0"}))
    write(plugin / "skills" / "review" / "SKILL.md", NOTES.replace("name: notes", "name: review"))
    servers = {
        "clock": {
            "command": "${PYTHON}",
            "args": ["${CLAUDE_PLUGIN_ROOT}/server.py"],
            "env": {"T": "${TOKEN:-none}"},
        },
        "broken": {"command": "${NOT_SET_ANYWHERE}"},
    }
    write(plugin / ".mcp.json", json.dumps({"mcpServers": servers}))
    write(root / "junk" / ".claude-plugin" / "plugin.json", "{not json")
    return plugin


async def test_a_plugin_brings_its_skills_and_mcp_servers(team: Team, tmp_path: Path) -> None:
    _plugin(tmp_path / "plugins")
    found = add_extensions(team.rt.tools, None, tmp_path / "plugins")
    assert [(p.name, p.version) for p in found.plugins] == [("acme", "1.2.0")]
    (entry,) = [e for e in team.rt.tools.entries() if e.name == "skill__acme__review"]
    assert (entry.source, entry.server, entry.groups) == ("plugin", "acme", ("plugin:acme",))
    assert any("junk" in p and "JSON" in p for p in found.problems)
    assert any("'broken' left out" in p and "NOT_SET_ANYWHERE" in p for p in found.problems)
    # The group grants every skill of the plugin.
    sub = [{"match": "tidy", "tool_calls": [TODO], "reply": "plugin: {tool_result}"}]
    _run, _events, reply = await _calls(team, ["plugin:acme"], "skill__acme__review", sub)
    assert reply == "plugin: Saved 1 todo(s), 0 completed."


def test_a_plugins_mcp_servers_are_expanded_and_named_after_it(tmp_path: Path) -> None:
    plugin_dir = _plugin(tmp_path / "plugins")
    (plugin,), _problems = load_plugins(tmp_path / "plugins", {"PYTHON": "/usr/bin/python3"})
    assert plugin.mcp_servers == {
        "acme-clock": {
            "command": "/usr/bin/python3",
            "args": [f"{plugin_dir}/server.py"],
            "env": {"T": "none"},
        }
    }
