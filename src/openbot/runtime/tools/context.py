"""What a tool call knows about the run it serves, injected as LangGraph runtime context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from openbot.runtime.tools.workspace import WorkspaceGrant
from openbot.store.db import Database


@dataclass(frozen=True)
class ToolEnv:
    db: Database
    bot_id: str
    bot_handle: str
    thread_id: str
    run_id: str
    workspace: WorkspaceGrant | None = None  # the thread's files and shell (tools.workspace)


@dataclass
class ModelCalls:
    """The model calls an invocation of a run's agent has made (``runner.agent`` keeps the limit)."""

    made: int = 0


@dataclass(frozen=True)
class RunContext:
    """What one run's model calls and tool calls need: injected as LangGraph runtime context."""

    env: ToolEnv
    model: BaseChatModel
    system_prompt: str
    subagents: Any = None  # the run's SubagentHost (runtime.tools.subagents); None in a sub-agent
    calls: ModelCalls = field(default_factory=ModelCalls)
