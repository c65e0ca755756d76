"""The tool registry: which tools a bot's agent is built with.

Built once per process: tools are stateless and read their run from the runtime context.
"""

from __future__ import annotations

from langchain_core.tools import BaseTool

from openbot.runtime.tools.automations import (
    create_automation,
    delete_automation,
    list_automations,
    schedule_message,
    toggle_automation,
)
from openbot.runtime.tools.builtins import ask_human, list_bots, read_history, recall_messages, todo_write
from openbot.runtime.tools.memory import manage_memory, search_memory

BUILTIN_TOOLS = (
    "list_bots",
    "ask_human",
    "read_history",
    "recall_messages",
    "todo_write",
    "schedule_message",
)


def build_tools() -> list[BaseTool]:
    return [
        *(list_bots, ask_human, read_history, recall_messages, todo_write),
        *(manage_memory, search_memory),  # left out for bots without memory_enabled (agent.py)
        *(schedule_message, create_automation, list_automations, toggle_automation, delete_automation),
    ]
