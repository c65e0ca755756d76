"""``openbot tools`` and ``openbot tools --mcp`` in 80 columns."""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner, Result

from mcp_tools.conftest import until
from openbot.cli import app
from openbot.runtime.engine import Runtime


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"COLUMNS": "80"})


async def test_tools_command_lists_every_source_and_the_servers(server: str, rt: Runtime) -> None:
    await until(lambda: rt.mcp.servers["fx"].status == "running")
    listed = await invoke("tools", "--server", server)
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert not [line for line in lines if len(line) > 80], listed.stdout
    [add] = [line for line in lines if line.split()[:1] == ["fx__add"]]
    assert add.split()[1:4] == ["mcp:fx", "tools", "available"]
    [ask] = [line for line in lines if line.split()[:1] == ["ask_human"]]
    assert ask.split()[1:4] == ["builtin", "always", "available"]

    servers = await invoke("tools", "--mcp", "--server", server)
    assert servers.exit_code == 0, servers.output
    [fx] = [line for line in servers.stdout.splitlines() if line.split()[:1] == ["fx"]]
    assert fx.split() == ["fx", "stdio", "running", "4", "0"]
