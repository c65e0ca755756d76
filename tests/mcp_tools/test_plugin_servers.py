"""A plugin from OPENBOT_PLUGINS_DIR: its skill is a sub-agent tool and its MCP server runs with
the others; a skill from OPENBOT_SKILLS_DIR too. The skill's sub-agent calls the plugin's MCP tool."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import httpx
import pytest

from conftest import Team
from mcp_tools.conftest import FIXTURE_SERVER, until
from openbot.config import Settings
from openbot.runtime.commands import BotUpdate
from openbot.runtime.engine import Runtime
from openbot.runtime.team import update_bot

CALC = """---
name: calc
description: Adds numbers with the calculator server.
allowed-tools: [acme-fx__add]
---
Add the numbers you are given with acme-fx__add and answer with the sum only.
"""


@pytest.fixture
def settings(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    plugin = tmp_path / "plugins" / "acme"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "acme"}))
    (plugin / "skills" / "calc").mkdir(parents=True)
    (plugin / "skills" / "calc" / "SKILL.md").write_text(CALC)
    shutil.copy(FIXTURE_SERVER, plugin / "server.py")
    server = {"command": "${ACME_PYTHON}", "args": ["${CLAUDE_PLUGIN_ROOT}/server.py"]}
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": {"fx": server}}))
    monkeypatch.setenv("ACME_PYTHON", sys.executable)
    skills = tmp_path / "skills"
    (skills / "echo").mkdir(parents=True)
    (skills / "echo" / "SKILL.md").write_text("---\ndescription: Says it back.\n---\nRepeat the task.")
    return settings.model_copy(update={"plugins_dir": tmp_path / "plugins", "skills_dir": skills})


def up(rt: Runtime) -> bool:
    return all(server.status == "running" for server in rt.mcp.servers.values())


async def test_a_plugin_and_a_skill_join_the_registry(rt: Runtime, client: httpx.AsyncClient) -> None:
    await until(lambda: up(rt))
    servers = {s["name"]: s for s in (await client.get("/api/v1/mcp")).json()["items"]}
    assert set(servers) == {"fx", "acme-fx"} and servers["acme-fx"]["tools"] == 4
    tools = {t["name"]: t for t in (await client.get("/api/v1/tools")).json()["items"]}
    calc = tools["skill__acme__calc"]
    assert (calc["source"], calc["server"], calc["granted_by"]) == ("plugin", "acme", "tools")
    assert calc["description"].startswith("Adds numbers with the calculator server.")
    assert set(calc["parameters"]["properties"]) == {"task"}
    assert (tools["skill__echo"]["source"], tools["skill__echo"]["server"]) == ("skill", None)
    assert tools["acme-fx__add"]["source"] == "mcp" and tools["acme-fx__add"]["server"] == "acme-fx"


async def test_a_plugins_skill_uses_the_plugins_mcp_server(rt: Runtime, team: Team) -> None:
    await until(lambda: up(rt))
    call = {"name": "skill__acme__calc", "args": {"task": "add 2 and 3"}}
    add = {"name": "acme-fx__add", "args": {"a": 2, "b": 3}}
    script = [{"match": "sum", "tool_calls": [call], "reply": "the skill says {tool_result}"}]
    sub = [{"match": "add", "tool_calls": [add], "reply": "{tool_result}"}]  # the skill's sub-agent
    update = BotUpdate(
        model="scripted",
        tools=["plugin:acme", "mcp:acme-fx"],
        model_settings={"script": script, "subagent_script": sub},
    )
    async with team.rt.db.transaction() as s:
        await update_bot(s, "engineer", update)
    thread = await team.thread("plugin")
    await team.post(thread, "@engineer what is the sum?")
    await team.idle()
    assert (await team.messages(thread))[-1]["content"] == "the skill says 5"
    (run,) = await team.runs(thread)
    events = (await team.rt.runs.get(run.id))["events"]
    assert [
        (e["payload"].get("name"), e["payload"].get("agent")) for e in events if e["type"] == "tool_call"
    ] == [
        ("skill__acme__calc", None),
        ("acme-fx__add", "sub-1"),
    ]
