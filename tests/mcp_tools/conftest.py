"""MCP fixtures: a config file naming the FastMCP fixture server, and waiting for a server's state."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openbot.config import Settings

FIXTURE_SERVER = Path(__file__).with_name("fixture_server.py")


def write_config(path: Path, servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def fixture_server() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURE_SERVER)]}


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    """The shared settings with ``fx``, the fixture server over stdio, and a 10 s call timeout."""
    config = write_config(tmp_path / "mcp.json", {"fx": fixture_server()})
    return settings.model_copy(update={"mcp_config": config, "mcp_call_timeout_seconds": 10.0})


async def until(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    """Wait for a condition on state another task changes (a subprocess starting), bounded."""
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 - the state is a subprocess's, no event to await
            await asyncio.sleep(0.05)
