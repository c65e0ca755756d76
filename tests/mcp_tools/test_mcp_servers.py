"""MCP servers over stdio from a config file: listed, called by a bot, killed, restarted."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import httpx
import pytest
from langchain_core.tools import StructuredTool, ToolException

from conftest import Team
from mcp_tools.conftest import until
from openbot.runtime.engine import Runtime
from openbot.runtime.tools import mcp
from openbot.runtime.tools.mcp_config import ServerConfig
from openbot.runtime.tools.registry import ToolRegistry


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


@pytest.fixture
def quick_keepalive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep-alive pings every 0.2 s (15 s in use), set before the runtime starts its servers."""
    monkeypatch.setattr(mcp, "KEEPALIVE_SECONDS", 0.2)


async def test_a_bot_calls_a_tool_the_server_is_killed_restarted_and_called_again(
    quick_keepalive: None, rt: Runtime, team: Team
) -> None:
    await until(lambda: running(rt))
    await team.script("engineer", [ADD, PID], tools=["mcp:fx"])
    thread = await team.thread("mcp")
    assert await bot_says(team, thread, "add") == "sum 5"
    pid = int(await bot_says(team, thread, "pid"))
    os.kill(pid, signal.SIGKILL)
    await until(lambda: rt.mcp.servers["fx"].status != "running")
    # The keep-alive ping or the client's reader of the dead stream: whichever notices first.
    assert rt.mcp.servers["fx"].error in (
        "ConnectionError: keep-alive ping failed: connection closed (the server process exited?)",
        "connection closed (the server process exited?)",
    )
    await until(lambda: running(rt, restarts=1))
    assert await bot_says(team, thread, "add") == "sum 5"
    assert int(await bot_says(team, thread, "pid")) != pid
    runs = await team.runs(thread)
    assert [r.status for r in runs] == ["completed"] * 4


async def test_a_call_the_server_dies_in_fails_at_once_and_the_run_goes_on(
    rt: Runtime, team: Team, tmp_path: Path
) -> None:
    """A request in flight when the server dies is answered "connection closed" by the MCP
    client: the call fails at once, not after its timeout (10 s here)."""
    await until(lambda: running(rt))
    arrived = tmp_path / "slow-arrived"
    slow = rule("slow", "fx__slow", seconds=60, mark=str(arrived))
    await team.script("engineer", [slow, PID], tools=["mcp:fx"])
    thread = await team.thread("mcp")
    pid = int(await bot_says(team, thread, "pid"))
    await team.post(thread, "@engineer slow")
    await until(arrived.exists)  # the server is inside the call
    os.kill(pid, signal.SIGKILL)
    await team.idle()
    # The model read a clear error (not the call timeout's) and the run went on.
    assert (await team.messages(thread))[-1]["content"] == (
        "MCP server 'fx' failed during slow (connection closed (the server process exited?)); "
        "it is being restarted, try again later"
    )
    runs = await team.runs(thread)
    assert [r.status for r in runs] == ["completed"] * 2


async def _waiting_call() -> tuple[mcp.McpServer, asyncio.Task[object]]:
    """A server whose live session never answers, and a call waiting on it."""
    server = mcp.McpServer(ServerConfig("fx", "stdio", None), ToolRegistry(), call_timeout=60)
    answer = asyncio.Event()

    async def waits(**_args: object) -> str:
        await answer.wait()
        return "never"

    server._live = {"add": StructuredTool.from_function(coroutine=waits, name="add", description="add")}
    server.status, server.error = "running", "keep-alive ping failed"
    call = asyncio.create_task(server.call("add", {}))
    await until(lambda: bool(server._calls))  # the call is waiting on the session
    return server, call


def test_a_closed_connection_reads_the_same_however_it_showed() -> None:
    """A ping sent after the connection closed meets the closed stream; one sent just before is
    answered "Connection closed" by the client: which one is a race, the reason is not."""
    from anyio import ClosedResourceError
    from mcp.shared.exceptions import McpError
    from mcp.types import CONNECTION_CLOSED, ErrorData

    assert mcp.CONNECTION_CLOSED == CONNECTION_CLOSED
    answered = McpError(ErrorData(code=CONNECTION_CLOSED, message="Connection closed"))
    assert mcp.describe(answered) == mcp.describe(ClosedResourceError()) == mcp.CLOSED
    other = McpError(ErrorData(code=-32601, message="Method not found"))
    assert mcp.describe(other) == "McpError: Method not found"


async def test_a_call_left_waiting_on_a_session_that_ended_is_ended_with_it() -> None:
    """The MCP client can leave a request waiting for an answer that cannot come (one registered
    as its session's reading ends); once the supervisor sees the session end (a failed keep-alive
    ping, every 15 s), such a call ends too instead of waiting out its timeout (60 s by default)."""
    server, call = await _waiting_call()
    server._end_calls()
    with pytest.raises(ToolException) as ended:
        async with asyncio.timeout(10):  # a guard: without the ending, the call waits for ever
            await call
    assert str(ended.value) == (
        "MCP server 'fx' failed during add (keep-alive ping failed); it is being restarted, try again later"
    )
    assert not server._calls and not call.cancelled()


async def test_a_real_cancellation_at_the_same_moment_is_not_swallowed() -> None:
    """The run is cancelled (or the process stops) in the same step as the session ends: the
    call's task is cancelled, not answered."""
    server, call = await _waiting_call()
    server._end_calls()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(10):
            await call
    assert call.cancelled() and not server._calls


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
