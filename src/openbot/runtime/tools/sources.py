"""The runtime's registry with every configured source: built-ins, the tools directory, skills,
plugins (their skills; their MCP servers join the others) and MCP."""

from __future__ import annotations

import logging

from openbot.config import Settings
from openbot.runtime.tools.extensions import add_extensions
from openbot.runtime.tools.mcp import McpServers
from openbot.runtime.tools.mcp_config import load_config, parse_server
from openbot.runtime.tools.registry import ToolRegistry
from openbot.runtime.tools.tools_dir import load_tools_dir

log = logging.getLogger(__name__)


def build_registry(settings: Settings) -> tuple[ToolRegistry, McpServers]:
    """The registry and the MCP servers feeding it (started by ``McpServers.running``)."""
    registry = ToolRegistry.with_builtins()
    if settings.tools_dir is not None:
        registry.add_source("tools_dir", load_tools_dir(settings.tools_dir))
    configs = []
    if settings.mcp_config is not None:
        try:
            configs = load_config(settings.mcp_config)
        except ValueError as exc:
            log.error("%s; no MCP server started", exc)
    extensions = add_extensions(registry, settings.skills_dir, settings.plugins_dir)
    configs += [parse_server(name, entry) for name, entry in extensions.mcp_servers().items()]
    servers = McpServers(configs, registry, settings.mcp_call_timeout_seconds)
    registry.add_source("mcp", servers)
    return registry, servers
