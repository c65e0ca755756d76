"""``openbot memory list``: a bot's memories from the terminal, newest first or ranked by --q."""

from __future__ import annotations

import asyncio

import httpx
from typer.testing import CliRunner, Result

from openbot.cli import app


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"COLUMNS": "80"})


async def test_memory_list_shows_newest_first_and_ranks_with_q(server: str) -> None:
    async with httpx.AsyncClient(base_url=f"{server}/api/v1") as http:
        for content in ("The release train leaves on Tuesdays", "Maria prefers terse bug reports"):
            assert (await http.post("/bots/engineer/memories", json={"content": content})).status_code == 201

    listed = await invoke("memory", "list", "engineer", "--server", server)
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert [("Maria" in lines[0]), ("release" in lines[1])] == [True, True]
    assert all(len(line) <= 80 for line in lines)

    ranked = await invoke(
        "memory", "list", "engineer", "--q", "when does the release train leave?", "--server", server
    )
    assert ranked.exit_code == 0 and len(ranked.output.splitlines()) == 1
    assert "knowledge/long" in ranked.output and "release train" in ranked.output
    assert float(ranked.output.split()[2]) > 0  # a tiny lexical score is shown, not rounded to 0
    long = "Deploys of the payments service wait for the freeze window to end on Monday mornings"
    async with httpx.AsyncClient(base_url=f"{server}/api/v1") as http:
        assert (await http.post("/bots/engineer/memories", json={"content": long})).status_code == 201
    clipped = (await invoke("memory", "list", "@engineer", "--server", server)).output
    assert any(line.endswith("…") and len(line) <= 80 for line in clipped.splitlines()), clipped

    nobody = await invoke("memory", "list", "nobody", "--server", server)
    assert nobody.exit_code != 0 and "nobody" in nobody.output
