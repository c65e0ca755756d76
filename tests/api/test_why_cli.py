"""``openbot why MESSAGE_ID BOT``: the answer and its evidence in the terminal; errors on stderr."""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner, Result

from conftest import Team
from openbot.cli import app


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"COLUMNS": "80"})


async def test_why_says_answered_or_observed_with_the_disposition(server: str, team: Team) -> None:
    thread = await team.thread(participants=["engineer", "qa"])
    posted = await team.post(thread, "@qa run the suite")
    await team.idle()
    answered = await invoke("why", posted.message.id, "@qa", "--server", server)
    assert answered.exit_code == 0, answered.output
    lines = answered.stdout.splitlines()
    assert lines[0].startswith("answered: @qa answered it")
    assert any(line.strip().startswith("saw it: engage (tier 0, mention)") for line in lines)
    assert any(line.strip().startswith("reply: msg") for line in lines)

    observed = await invoke("why", posted.message.id, "engineer", "--all", "--server", server)
    assert observed.exit_code == 0, observed.output
    assert observed.stdout.startswith("observed: @engineer read it without answering")
    assert "@qa: engage (tier 0, mention)" in observed.stdout


async def test_why_for_an_unknown_message_fails_with_one_line(server: str, team: Team) -> None:
    result = await invoke("why", "msg_missing", "qa", "--server", server)
    assert result.exit_code == 1
    assert "404 not_found" in result.stderr and result.stdout == ""
