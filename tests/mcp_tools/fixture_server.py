"""A small MCP server written with the ``mcp`` SDK (FastMCP), run over stdio by the MCP tests."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcp.server.fastmcp import FastMCP

server = FastMCP("fixture", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def pid() -> int:
    """This server process's id."""
    return os.getpid()


@server.tool()
async def slow(seconds: float, mark: str = "") -> str:
    """Answer after a while (creating the file ``mark`` first, if given: the call has arrived)."""
    if mark:
        Path(mark).touch()  # noqa: ASYNC240 - an empty file, before the wait the test times
    await asyncio.sleep(seconds)
    return "done"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ValueError(reason)


if __name__ == "__main__":
    # ``fixture_server.py`` speaks stdio; ``fixture_server.py --http PORT`` streamable HTTP on /mcp.
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.settings.host, server.settings.port = "127.0.0.1", int(sys.argv[2])
        server.run("streamable-http")
    else:
        server.run("stdio")
