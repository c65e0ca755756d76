"""Plugins: directories in ``OPENBOT_PLUGINS_DIR`` in (a subset of) the Claude Code plugin layout.

::

    <plugins-dir>/<dir>/.claude-plugin/plugin.json   {"name", "description"?, "version"?}
    <plugins-dir>/<dir>/skills/<skill>/SKILL.md      skills (runtime.tools.skills)
    <plugins-dir>/<dir>/.mcp.json                    {"mcpServers": {name: {...}}}

A plugin's skills become tools ``skill__<plugin>__<skill>`` (source ``plugin``, server the plugin's
name, group ``plugin:<plugin>``). Its MCP servers are named ``<plugin>-<server>`` (so their tools
are ``<plugin>-<server>__<tool>``); every string in their configuration has ``${VAR}`` (or
``${VAR:-default}``) expanded from the environment and ``${CLAUDE_PLUGIN_ROOT}`` /
``${PLUGIN_ROOT}`` set to the plugin's directory. A server naming a variable that is not set is
left out with a problem. Other manifest parts (commands, agents, hooks) are not supported and
ignored. A directory that is not a valid plugin is skipped with a problem; it never stops the server.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openbot.runtime.tools.skills import _NAME, Skill, load_skills

log = logging.getLogger(__name__)

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class PluginError(ValueError):
    """A plugin (or one of its MCP servers) that cannot be loaded, and why."""


@dataclass
class Plugin:
    name: str
    path: Path
    description: str = ""
    version: str | None = None
    skills: list[Skill] = field(default_factory=list)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def expand(value: Any, env: Mapping[str, str]) -> Any:
    """``value`` with ``${VAR}`` / ``${VAR:-default}`` expanded in every string, recursively."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env and env[name] != "":
                return env[name]
            if default is not None:
                return default
            raise PluginError(f"${{{name}}} is not set")

        return _VAR.sub(one, value)
    if isinstance(value, list):
        return [expand(item, env) for item in value]
    if isinstance(value, dict):
        return {key: expand(item, env) for key, item in value.items()}
    return value


def load_plugin(path: Path, environ: Mapping[str, str] | None = None) -> Plugin:
    """The plugin in directory ``path``. Raises :class:`PluginError` when it has no valid manifest."""
    manifest_path = path / ".claude-plugin" / "plugin.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PluginError(f"{manifest_path}: cannot be read as JSON ({exc})") from exc
    if not isinstance(manifest, dict):
        raise PluginError(f"{manifest_path}: must be a JSON object")
    name = str(manifest.get("name") or path.name).strip()
    if not _NAME.match(name):
        raise PluginError(
            f"{manifest_path}: name {name!r} must be letters, digits, '-' or '_' (at most 27, no '__')"
        )
    version = manifest.get("version")
    plugin = Plugin(name, path, str(manifest.get("description") or ""), str(version) if version else None)
    plugin.skills, plugin.problems = load_skills(path / "skills", plugin=name)
    env = {
        **(os.environ if environ is None else environ),
        "CLAUDE_PLUGIN_ROOT": str(path),
        "PLUGIN_ROOT": str(path),
    }
    _load_mcp(plugin, path / ".mcp.json", env)
    return plugin


def _load_mcp(plugin: Plugin, path: Path, env: Mapping[str, str]) -> None:
    if not path.is_file():
        return
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        plugin.problems.append(f"{path}: cannot be read as JSON ({exc})")
        return
    servers = config.get("mcpServers", config) if isinstance(config, dict) else None
    if not isinstance(servers, dict):
        plugin.problems.append(f"{path}: expected {{'mcpServers': {{name: config}}}}")
        return
    for server, raw in servers.items():
        if not isinstance(raw, dict) or not _NAME.match(str(server)):
            plugin.problems.append(f"{path}: server {server!r} is not a valid name with an object config")
            continue
        try:
            plugin.mcp_servers[f"{plugin.name}-{server}"] = expand(raw, env)
        except PluginError as exc:
            plugin.problems.append(f"{path}: server {server!r} left out: {exc}")


def load_plugins(
    directory: Path | None, environ: Mapping[str, str] | None = None
) -> tuple[list[Plugin], list[str]]:
    """Every plugin under ``directory`` (sorted by directory name), and the problems of those skipped."""
    if directory is None or not directory.is_dir():
        return [], []
    plugins: list[Plugin] = []
    problems: list[str] = []
    seen: set[str] = set()
    for child in sorted(directory.iterdir()):
        if not (child / ".claude-plugin").is_dir():
            continue
        try:
            plugin = load_plugin(child, environ)
        except PluginError as exc:
            problems.append(str(exc))
            log.warning("plugin skipped: %s", exc)
            continue
        if plugin.name in seen:
            problems.append(f"{child}: a plugin named {plugin.name!r} is already loaded")
            continue
        seen.add(plugin.name)
        plugins.append(plugin)
        problems.extend(plugin.problems)
        for problem in plugin.problems:
            log.warning("plugin %s: %s", plugin.name, problem)
    return plugins, problems
