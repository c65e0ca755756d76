"""MCP servers over stdio from a config file: listed, called by a bot, killed, restarted."""

from __future__ import annotations

import os
import signal

import httpx

from conftest import Team
from mcp_tools.conftest import until
from openbot.runtime.engine import Runtime


def rule(word: str, tool: str, reply: str = "{tool_result}", **args: object) -> dict[str, object]:
    return {"match": word, "reply": reply, "tool_calls": [{"name": tool, "args": args}]}


ADD = rule("add", "fx__add", "sum {tool_result}", a=2, b=3)
PID = rule("pid", "fx__pid")


def running(rt: Runtime, restarts: int = 0) -> bool:
    server = rt.mcp.servers["fx"]
    return server.status == "running" and server.restarts >= restarts


async def bot_says(team: Team, thread: str, text: str) -> str:
    await team.post(thread, f"@engineer {text}")
    await team.idle()
    return str((await team.messages(thread))[-1]["content"])


async def test_the_servers_tools_are_listed_with_their_server(rt: Runtime, client: httpx.AsyncClient) -> None:
    await until(lambda: running(rt))
    servers = (await client.get("/api/v1/mcp")).json()["items"]
    assert servers == [
        {
            "name": "fx",
            "transport": "stdio",
            "status": "running",
            "error": None,
            "tools": 4,
            "tool_names": ["fx__add", "fx__fail", "fx__pid", "fx__slow"],
            "restarts": 0,
        }
    ]
    tools = {t["name"]: t for t in (await client.get("/api/v1/tools")).json()["items"]}
    add = tools["fx__add"]
    assert add["source"] == "mcp" and add["server"] == "fx" and add["status"] == "available"
    assert add["description"] == "Add two integers."
    assert set(add["parameters"]["properties"]) == {"a", "b"}
    assert tools["ask_human"]["source"] == "builtin" and tools["ask_human"]["server"] is None


async def test_a_bot_calls_a_tool_the_server_is_killed_restarted_and_called_again(
    rt: Runtime, team: Team
) -> None:
    await until(lambda: running(rt))
    await team.script("engineer", [ADD, PID], tools=["mcp:fx"])
    thread = await team.thread("mcp")
    assert await bot_says(team, thread, "add") == "sum 5"
    pid = int(await bot_says(team, thread, "pid"))
    os.kill(pid, signal.SIGKILL)
    error = await bot_says(team, thread, "add")
    # The model read a clear error and the run went on.
    assert error == (
        "sum MCP server 'fx' failed during add (connection closed (the server process exited?)); "
        "it is being restarted, try again later"
    )
    await until(lambda: running(rt, restarts=1))
    assert await bot_says(team, thread, "add") == "sum 5"
    assert int(await bot_says(team, thread, "pid")) != pid
    runs = await team.runs(thread)
    assert [r.status for r in runs] == ["completed"] * 5


async def test_a_tool_error_a_slow_call_and_a_tool_not_granted(rt: Runtime, team: Team) -> None:
    await until(lambda: running(rt))
    rt.mcp.servers["fx"].call_timeout = 0.5
    fail, slow = rule("fail", "fx__fail", reason="no"), rule("slow", "fx__slow", seconds=5)
    await team.script("engineer", [fail, slow, PID], tools=["fx__fail", "fx__slow"])
    thread = await team.thread("mcp")
    assert "no" in await bot_says(team, thread, "fail")
    assert await bot_says(team, thread, "slow") == "MCP server 'fx' did not answer slow within 0.5 s"
    assert "fx__pid is not a valid tool" in await bot_says(team, thread, "pid")
    assert rt.mcp.servers["fx"].restarts == 0  # slow is not dead: the ping answered
