"""An MCP server over streamable HTTP (the FastMCP fixture on a port): called by a bot, stopped
(the next call is a clear error), started again on the same port (the supervisor reconnects)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Boot, Team
from mcp_tools.conftest import FIXTURE_SERVER, until, write_config
from openbot.config import Settings

ADD = {
    "match": "add",
    "reply": "sum {tool_result}",
    "tool_calls": [{"name": "web__add", "args": {"a": 2, "b": 3}}],
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpServer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [sys.executable, str(FIXTURE_SERVER), "--http", str(self.port)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the port opens once the server is up
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("the HTTP MCP fixture did not open its port")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer(free_port())
    server.start()
    yield server
    server.stop()


async def test_a_streamable_http_server_is_called_lost_and_reconnected(
    boot: Boot, settings: Settings, tmp_path: Path, http_server: HttpServer
) -> None:
    url = f"http://127.0.0.1:{http_server.port}/mcp"
    settings.mcp_config = write_config(tmp_path / "mcp.json", {"web": {"url": url}})
    settings.mcp_call_timeout_seconds = 2.0
    async with boot() as rt:
        team = Team(rt)
        web = rt.mcp.servers["web"]
        await until(lambda: web.status == "running")  # it retries while the port is not open yet
        assert web.transport == "streamable_http" and set(web.proxies) >= {"web__add", "web__pid"}
        await team.script("engineer", [ADD], tools=["mcp:web"])
        thread = await team.thread()

        async def says(text: str) -> str:
            await team.post(thread, f"@engineer {text}")
            await team.idle()
            return str((await team.messages(thread))[-1]["content"])

        assert await says("add") == "sum 5"
        restarts = web.restarts
        http_server.stop()
        # Over HTTP the client's request fails to connect in the session's own task, which ends the
        # session: the supervisor then ends the call waiting on it. Were the session to outlive the
        # call's 2 s, the call's timeout would answer instead (and the ping after it fail).
        error = await says("add")
        assert error in (
            "sum MCP server 'web' failed during add (ConnectError: All connection attempts failed); "
            "it is being restarted, try again later",
            "sum MCP server 'web' did not answer add within 2 s",
        )
        http_server.start()
        await until(lambda: web.status == "running" and web.restarts > restarts)
        assert await says("add") == "sum 5"
