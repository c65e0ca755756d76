"""``openbot tools``: every tool of the registry by source, or (``--mcp``) the MCP servers."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from openbot.client import Client
from openbot.tables import clipped_column, fit_widths, new_table


def tool_table(tools: list[dict[str, Any]], width: int) -> Table:
    """One line a tool: name, source (and server), how a bot gets it, status, description."""
    table = new_table("Tools")
    name = max((len(t["name"]) for t in tools), default=4)
    source = max((len(_source(t)) for t in tools), default=6)
    [description] = fit_widths(width, [name, source, 16, 9], [1])
    table.add_column("Name", style="bold", no_wrap=True)
    table.add_column("Source", no_wrap=True)
    table.add_column("Granted by", no_wrap=True)
    table.add_column("Status", no_wrap=True)
    clipped_column(table, "Description", description)
    for tool in tools:
        status = tool["status"]
        table.add_row(
            escape(tool["name"]),
            escape(_source(tool)),
            tool["granted_by"],
            status if status == "available" else f"[red]{status}[/red]",
            escape(" ".join((tool["description"] or "").split())),
        )
    return table


def mcp_table(servers: list[dict[str, Any]], width: int) -> Table:
    table = new_table("MCP servers")
    [error] = fit_widths(width, [max((len(s["name"]) for s in servers), default=4), 15, 8, 5, 8], [1])
    for column in ("Name", "Transport", "Status", "Tools", "Restarts"):
        table.add_column(column, no_wrap=True)
    clipped_column(table, "Last error", error)
    for server in servers:
        table.add_row(
            escape(server["name"]),
            server["transport"],
            server["status"],
            str(server["tools"]),
            str(server["restarts"]),
            escape(server["error"] or ""),
        )
    return table


def _source(tool: dict[str, Any]) -> str:
    return f"{tool['source']}:{tool['server']}" if tool.get("server") else tool["source"]


def print_tools(server: str, token: str | None, *, mcp: bool) -> None:
    console = Console(highlight=False)
    with Client(server, token) as client:
        if mcp:
            console.print(mcp_table(client.mcp_servers(), console.width))
        else:
            console.print(tool_table(client.tools(), console.width))
