"""The tool registry: which tools a bot's agent is built with.

Built once per process: tools are stateless and read their run from the runtime context.
"""

from __future__ import annotations

from langchain_core.tools import BaseTool

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
from openbot.runtime.tools.memory import manage_memory, search_memory

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
GRANTED_TOOLS = ("run_shell", "save_draft", *AUTOMATION_TOOLS)
WORKSPACE_ACCESS = ("none", "read", "write")


def workspace_tools(workspace_access: str) -> tuple[str, ...]:
    """The file tools a bot with this ``workspace_access`` has."""
    return {"read": READ_TOOLS, "write": READ_TOOLS + WRITE_TOOLS}.get(workspace_access, ())


def granted(name: str, tools: list[str], workspace_access: str) -> bool:
    """Whether a bot with these ``tools`` and ``workspace_access`` is built with tool ``name``."""
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
        *(manage_memory, search_memory),  # left out for bots without memory_enabled (agent.py)
        *(schedule_message, create_automation, list_automations, toggle_automation, delete_automation),
        *WORKSPACE_TOOLS,  # by workspace_access, and run_shell by name (granted)
        save_draft,
    ]
