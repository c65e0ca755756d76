"""The tool registry: every tool the server knows, from every source, and which ones a bot gets.

One registry per runtime (``Runtime.tools``), made of named *sources*. A source is anything with
``entries() -> Iterable[ToolEntry]``; it is read on each lookup, so a source whose tools change
(an MCP server coming up, going down) just returns its current ones and calls
``registry.changed()`` so compiled agents are rebuilt. Sources today: ``builtin``
(:data:`BUILTIN_SOURCE`), ``tools_dir`` (``OPENBOT_TOOLS_DIR``, runtime.tools.tools_dir) and ``mcp``
(``OPENBOT_MCP_CONFIG``, runtime.tools.mcp). To add one (skills, plugins)::

    registry.add_source("skills", StaticSource([ToolEntry(tool, "skill", groups=("skill:x",))]))

A bot's ``tools`` names a tool or a *group* of an entry (``mcp:<server>``: all of that server's
tools); built-ins keep their own rule (:func:`granted`). ``approval_tools`` is expanded the same
way. Tools are stateless and read their run from the runtime context.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from openbot.runtime.tools.automations import (
    AUTOMATION_TOOLS,
    create_automation,
    delete_automation,
    list_automations,
    schedule_message,
    toggle_automation,
)
from openbot.runtime.tools.builtins import ask_human, list_bots, read_history, recall_messages, todo_write
from openbot.runtime.tools.drafts import save_draft
from openbot.runtime.tools.files import READ_TOOLS, WORKSPACE_TOOLS, WRITE_TOOLS
from openbot.runtime.tools.memory import MEMORY_TOOLS, manage_memory, search_memory
from openbot.runtime.tools.subagents import spawn_agent

BUILTIN_TOOLS = (
    "list_bots",
    "ask_human",
    "read_history",
    "recall_messages",
    "todo_write",
    "schedule_message",
)
# Optional built-ins a bot has only when its ``tools`` name them; the workspace file tools come
# with its ``workspace_access`` instead (read: list, read, search; write: also write and edit).
GRANTED_TOOLS = ("run_shell", "save_draft", "spawn_agent", *AUTOMATION_TOOLS)
WORKSPACE_ACCESS = ("none", "read", "write")


@dataclass(frozen=True)
class ToolEntry:
    """One tool as the registry lists it (``GET /api/v1/tools``).

    ``source`` is what API.md names ("builtin", "plugin", "mcp", "skill"); ``server`` the MCP
    server, plugin or skill bundle it belongs to; ``groups`` the selectors that grant it as a
    whole (``mcp:<server>``); ``status`` "available", or the state of its server when not up.
    """

    tool: BaseTool
    source: str
    server: str | None = None
    groups: tuple[str, ...] = ()
    status: str = "available"

    @property
    def name(self) -> str:
        return self.tool.name


class ToolSource(Protocol):
    def entries(self) -> Iterable[ToolEntry]: ...


@dataclass
class StaticSource:
    """A fixed list of entries (built-ins, a tools directory, skills loaded at start)."""

    items: list[ToolEntry] = field(default_factory=list)

    def entries(self) -> Iterable[ToolEntry]:
        return self.items


def workspace_tools(workspace_access: str) -> tuple[str, ...]:
    """The file tools a bot with this ``workspace_access`` has."""
    return {"read": READ_TOOLS, "write": READ_TOOLS + WRITE_TOOLS}.get(workspace_access, ())


def granted(name: str, tools: list[str], workspace_access: str) -> bool:
    """Whether a bot with these ``tools`` and ``workspace_access`` is built with built-in ``name``."""
    if name in READ_TOOLS:
        return workspace_access in ("read", "write")
    if name in WRITE_TOOLS:
        return workspace_access == "write"
    if name in GRANTED_TOOLS:
        return name in tools
    return True


def build_tools() -> list[BaseTool]:
    return [
        *(list_bots, ask_human, read_history, recall_messages, todo_write),
        *(manage_memory, search_memory),  # left out for bots without memory_enabled
        *(schedule_message, create_automation, list_automations, toggle_automation, delete_automation),
        *WORKSPACE_TOOLS,  # by workspace_access, and run_shell by name (granted)
        save_draft,
        spawn_agent,  # by name (granted); runtime.tools.subagents
    ]


def builtin_source() -> StaticSource:
    return StaticSource([ToolEntry(t, "builtin") for t in build_tools()])


class ToolRegistry:
    """Named sources of tools; what a bot is built with; a version that moves when tools change."""

    def __init__(self) -> None:
        self._sources: dict[str, ToolSource] = {}
        #: Bumped by :meth:`changed`; part of the compiled-agent cache key.
        self.version = 0

    @classmethod
    def with_builtins(cls) -> ToolRegistry:
        registry = cls()
        registry.add_source("builtin", builtin_source())
        return registry

    def add_source(self, name: str, source: ToolSource) -> None:
        """Add (or replace) a source; its tools join the registry at once."""
        self._sources[name] = source
        self.changed()

    def changed(self) -> None:
        self.version += 1

    async def ready(self, names: list[str]) -> None:
        """Wait (bounded, by the source) for sources still starting the tools named here: a run
        right after boot, or resuming an approved MCP call, gets its tools rather than none."""
        for source in list(self._sources.values()):
            wait = getattr(source, "ready", None)
            if wait is not None:
                await wait(names)

    def entries(self) -> Iterator[ToolEntry]:
        """Every tool, the first source to name a tool wins (built-ins first)."""
        seen: set[str] = set()
        for source in list(self._sources.values()):
            for entry in source.entries():
                if entry.name not in seen:
                    seen.add(entry.name)
                    yield entry

    def names(self) -> set[str]:
        return {e.name for e in self.entries()}

    def parameters(self, name: str) -> dict[str, Any] | None:
        """The JSON schema of a tool's arguments, as ``GET /tools`` shows it; None for a tool not
        known here now (an MCP server that is down, a tool removed since the run paused)."""
        for entry in self.entries():
            if entry.name == name:
                parameters: dict[str, Any] = describe(entry)["parameters"]
                return parameters
        return None

    def groups(self) -> set[str]:
        return {g for e in self.entries() for g in e.groups}

    def expand(self, names: Iterable[str]) -> tuple[str, ...]:
        """Tool names for a list of names and groups (``mcp:<server>``), known tools only, in order."""
        wanted = set(names)
        if not wanted:  # most bots gate no tool: no need to walk the registry
            return ()
        return tuple(e.name for e in self.entries() if e.name in wanted or wanted.intersection(e.groups))

    def for_bot(self, tools: list[str], workspace_access: str, memory_enabled: bool) -> list[BaseTool]:
        """The tools a bot with this profile is built with."""
        selected = set(self.expand(tools))
        chosen: list[BaseTool] = []
        for entry in self.entries():
            if entry.source == "builtin":
                if not granted(entry.name, tools, workspace_access):
                    continue
                if entry.name in MEMORY_TOOLS and not memory_enabled:
                    continue
            elif entry.name not in selected:
                continue
            chosen.append(entry.tool)
        return chosen


def describe(entry: ToolEntry) -> dict[str, Any]:
    """A tool as ``GET /api/v1/tools`` shows it."""
    parameters = convert_to_openai_tool(entry.tool)["function"].get("parameters", {})
    return {
        "id": entry.name,
        "name": entry.name,
        "source": entry.source,
        "server": entry.server,
        "description": entry.tool.description,
        "parameters": parameters,
        "status": entry.status,
        "granted_by": granted_by(entry),
    }


def granted_by(entry: ToolEntry) -> str:
    """How a bot gets the tool: "always" (a built-in every bot has), "workspace_access" (the file
    tools), or "tools" (named in its ``tools``, or a group of it such as ``mcp:<server>``)."""
    if entry.source != "builtin" or entry.name in GRANTED_TOOLS:
        return "tools"
    if entry.name in READ_TOOLS or entry.name in WRITE_TOOLS:
        return "workspace_access"
    return "always"
