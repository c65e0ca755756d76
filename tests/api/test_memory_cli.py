"""``openbot memory maintain|consolidate`` against a real server."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from typer.testing import CliRunner, Result

from conftest import Team
from openbot.cli import app
from openbot.core.clock import FakeClock
from openbot.runtime.commands import BotUpdate
from openbot.runtime.memory import store
from openbot.runtime.team import get_actor, update_bot


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))


async def remember(team: Team, content: str, **fields: object) -> str:
    async with team.rt.db.transaction() as s:
        bot = await get_actor(s, "engineer")
        return (await store.create(s, store.BotRef(bot.id, bot.handle), content, **fields)).id


async def test_memory_commands_decay_and_consolidate(server: str, team: Team, clock: FakeClock) -> None:
    old = clock.now() - timedelta(days=40)
    gone = await remember(team, "An old habit", tier="short", created_at=old, last_accessed_at=old)
    first = await remember(team, "Deploys go through CI first")
    second = await remember(team, "Deploys always go through CI first")
    proposal = {"action": "merge", "match": "CI first", "content": "Every deploy goes through CI"}
    async with team.rt.db.transaction() as s:
        settings = {"script": [], "consolidation": [proposal]}
        await update_bot(s, "engineer", BotUpdate(model="scripted", model_settings=settings))
    maintained = await invoke("memory", "maintain", "@engineer", "--server", server)
    assert maintained.exit_code == 0, maintained.output
    assert maintained.stdout == f"archived 0\npruned 1: {gone}\n"
    consolidated = await invoke("memory", "consolidate", "engineer", "--server", server)
    assert consolidated.exit_code == 0, consolidated.output
    (line,) = consolidated.stdout.splitlines()
    assert line.startswith("merge ") and first in line and second in line and " -> mem_" in line
    again = await invoke("memory", "consolidate", "engineer", "--server", server)
    assert again.stdout == "no similar memories: nothing to decide\n"
    unknown = await invoke("memory", "maintain", "nobody", "--server", server)
    assert unknown.exit_code == 1 and "nobody" in unknown.stderr
