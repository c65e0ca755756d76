"""Skills and plugins join the tool registry (sources ``skills`` and ``plugins``).

- ``OPENBOT_SKILLS_DIR``: each ``<name>/SKILL.md`` is a tool ``skill__<name>`` (source ``skill``).
- ``OPENBOT_PLUGINS_DIR``: each plugin's skills are tools ``skill__<plugin>__<name>`` (source
  ``plugin``, server the plugin's name, group ``plugin:<plugin>`` for all of them); its MCP servers,
  named ``<plugin>-<server>``, are handed to the MCP servers (runtime.tools.mcp), which start,
  supervise and list them as they do the servers of ``OPENBOT_MCP_CONFIG``.

Both are read once, at start; a restart picks up changes. What could not be loaded is logged and
kept in :attr:`Extensions.problems`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openbot.runtime.tools.plugins import Plugin, load_plugins
from openbot.runtime.tools.registry import StaticSource, ToolEntry, ToolRegistry
from openbot.runtime.tools.skills import Skill, load_skills, skill_tool


@dataclass
class Extensions:
    skills: list[Skill] = field(default_factory=list)
    plugins: list[Plugin] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def mcp_servers(self) -> dict[str, dict[str, Any]]:
        """The plugins' MCP servers, ``<plugin>-<server>`` → its configuration (variables expanded)."""
        return {name: entry for plugin in self.plugins for name, entry in plugin.mcp_servers.items()}


def add_extensions(registry: ToolRegistry, skills_dir: Path | None, plugins_dir: Path | None) -> Extensions:
    """Load the skills and plugins and add their tools to ``registry``."""
    skills, problems = load_skills(skills_dir)
    plugins, plugin_problems = load_plugins(plugins_dir)
    found = Extensions(skills, plugins, problems + plugin_problems)
    if skills:
        registry.add_source("skills", StaticSource([ToolEntry(skill_tool(s), "skill") for s in skills]))
    entries = [
        ToolEntry(skill_tool(s), "plugin", server=p.name, groups=(f"plugin:{p.name}",))
        for p in plugins
        for s in p.skills
    ]
    if entries:
        registry.add_source("plugins", StaticSource(entries))
    return found
