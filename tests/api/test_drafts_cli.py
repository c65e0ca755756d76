"""``openbot drafts``: list what waits, send one edited, reject one with a reason; 80 columns."""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner, Result

from conftest import Team
from openbot.cli import app
from openbot.runtime.commands import BotUpdate
from openbot.thread_refs import short_id


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"COLUMNS": "80"})


async def test_drafts_command_lists_sends_and_rejects(server: str, team: Team) -> None:
    def rule(name: str) -> dict[str, object]:
        args = {"title": f"Note {name}", "content": f"A long note {name} " * 8, "target": {"actor": "you"}}
        return {"match": name, "reply": "saved", "tool_calls": [{"name": "save_draft", "args": args}]}

    await team.rt.team.update_bot("engineer", BotUpdate(tools=["save_draft"]))
    await team.script("engineer", [rule("alpha"), rule("beta")])
    thread = await team.thread("Outreach")
    for name in ("alpha", "beta"):
        await team.post(thread, f"@engineer {name}")
        await team.idle()
    async with team.rt.db.read() as s:
        from openbot.runtime import drafts

        pending = await drafts.list_drafts(s, status="pending", bot_id=None, limit=10)
    alpha, beta = (d["id"] for d in pending)

    listed = await invoke("drafts", "--server", server)
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert not [line for line in lines if len(line) > 80], listed.stdout
    assert sum(short_id(alpha) in line and "Note alpha" in line for line in lines) == 1, listed.stdout
    assert sum(line.split()[2:3] == ["@you"] for line in lines if short_id(beta) in line) == 1

    sent = await invoke("drafts", "--send", short_id(alpha), "--content", "Edited note", "--server", server)
    assert sent.exit_code == 0 and f"sent {short_id(alpha)} as @engineer" in sent.stdout
    rejected = await invoke("drafts", "--reject", beta, "--reason", "not now", "--server", server)
    assert rejected.exit_code == 0 and "rejected" in rejected.stdout
    kinds = [(m["metadata"].get("kind"), m["content"]) for m in await team.messages(thread)]
    assert ("draft", "Edited note") in kinds
    assert any(k == "draft_rejected" and "not now" in c for k, c in kinds)
    again = await invoke("drafts", "--send", alpha, "--server", server)
    assert again.exit_code == 1 and "is sent, not pending" in again.output  # the 409, in one line
    history = await invoke("drafts", "--status", "sent", "--server", server)
    assert short_id(alpha) in history.stdout
