"""The tool registry: every tool the server knows (GET /tools) and the MCP servers (GET /mcp)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from typing_extensions import TypedDict

from openbot.api.deps import RuntimeDep
from openbot.runtime.tools.registry import describe

router = APIRouter()


class ToolView(TypedDict):
    id: str
    name: str
    source: str
    server: str | None
    description: str
    parameters: dict[str, Any]
    status: str
    granted_by: str


class ToolList(TypedDict):
    items: list[ToolView]


class McpServerView(TypedDict):
    name: str
    transport: str
    status: str
    error: str | None
    tools: int
    tool_names: list[str]
    restarts: int


class McpServerList(TypedDict):
    items: list[McpServerView]


@router.get("/tools")
async def list_tools(rt: RuntimeDep) -> ToolList:
    """Every tool from every source (built-in, plugin, mcp, skill), by the name a bot's ``tools``
    and ``approval_tools`` use; an MCP tool's status is its server's while that is not up."""
    return {"items": [ToolView(**describe(e)) for e in rt.tools.entries()]}  # type: ignore[typeddict-item]


@router.get("/mcp")
async def list_mcp_servers(rt: RuntimeDep) -> McpServerList:
    """The configured MCP servers: status starting, running, failed or stopped; the last error;
    how many tools (and their names); how many times each was restarted."""
    return {"items": [McpServerView(**v) for v in rt.mcp.views()]}  # type: ignore[typeddict-item]
