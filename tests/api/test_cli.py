"""The ``openbot`` command line against a real server."""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner

from conftest import Team
from openbot.cli import app


async def test_post_command_posts_and_reports_who_woke(server: str, team: Team) -> None:
    thread = await team.thread()
    runner = CliRunner()
    result = await asyncio.to_thread(
        runner.invoke, app, ["post", thread, "@engineer from the terminal", "--server", server]
    )
    assert result.exit_code == 0, result.output
    assert "woke @engineer" in result.output
    await team.idle()
    assert (await team.messages(thread))[0]["content"] == "@engineer from the terminal"
    bad = await asyncio.to_thread(runner.invoke, app, ["post", "thr_missing", "hi", "--server", server])
    assert bad.exit_code == 1 and "not_found" in bad.output


def test_serve_refuses_a_public_bind_without_a_token() -> None:
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2 and "OPENBOT_API_TOKEN" in result.output
