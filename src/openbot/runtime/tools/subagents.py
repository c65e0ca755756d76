"""Sub-agents: ``spawn_agent`` and the skills built on it (DESIGN §9, the dispatcher/executor split).

A sub-agent is an ephemeral LangChain agent inside the current run: the run's own model (for the
scripted model, one that matches its rules against the sub-agent's task), a system prompt of its
own, and only the tools it was given — a subset of its parent's, never ``spawn_agent``, a skill,
``ask_human`` or a tool behind the parent's approval (a sub-agent cannot pause for a person, so a
gated tool stays with the parent, which asks). A tool outside the subset is not bound: the model
cannot call it. It has no checkpointer and runs in a context of its own (its tokens do not stream
as the parent's reply). Its steps are written as the run's events with ``payload.agent`` (``sub-1``,
``sub-2``… in the run) and ``payload.parent`` (the id of the tool call that spawned it); its model
calls and tokens count in the run's usage. Bounds: ``model_settings.subagent_max_model_calls``
(default 8) model calls per sub-agent, its answer capped at :data:`ANSWER_CAP` characters, and the
run's tool bounds (runner.bounds: each of its tool calls, and the spawning call as a whole, under
``OPENBOT_TOOL_TIMEOUT_SECONDS`` and ``OPENBOT_TOOL_OUTPUT_MAX_CHARS``).

The scripted model (DESIGN §11): a sub-agent follows ``model_settings.subagent_script`` when the
bot has one, else its ``script``, matched against the task text.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, ToolException, tool

from openbot.runtime.runner.models import SCRIPTED, build_chat_model
from openbot.runtime.tools.context import RunContext

SPAWN_AGENT = "spawn_agent"
SKILL_PREFIX = "skill__"
NOT_DELEGABLE = frozenset({SPAWN_AGENT, "ask_human"})
DEFAULT_MAX_MODEL_CALLS = 8
ANSWER_CAP = 8000
_STEP_CAP = 4000

Events = list[tuple[str, dict[str, Any]]]
Record = Callable[[Events], Awaitable[None]]


class Usage(Protocol):
    """Where a sub-agent's model calls and tokens are counted (the run's Outcome)."""

    model_calls: int
    input_tokens: int
    output_tokens: int


_BASE_PROMPT = (
    "You are {label}, a focused sub-agent working for @{handle} on one task. Use your tools to do "
    "it. Your final message is your answer: it goes back to @{handle} only, so make it complete "
    "and self-contained. You cannot ask anyone a question."
)


@dataclass
class SubagentHost:
    """What a run lends its sub-agents: its tools, its model, and where their steps are written."""

    tools: Callable[[], list[BaseTool]]  # the parent agent's tools (computed when first needed)
    approvals: Callable[[], Iterable[str]]  # the parent's tools behind approval (likewise)
    model: BaseChatModel
    model_name: str
    model_settings: dict[str, Any]
    handle: str
    record: Record
    usage: Usage
    middleware: tuple[Any, ...] = ()  # the run's tool bounds (runner.bounds), for the sub-agent's calls too
    _labels: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _by_name: dict[str, BaseTool] | None = None

    def delegable(self) -> dict[str, BaseTool]:
        """The parent's tools a sub-agent may be given, by name."""
        if self._by_name is None:
            gated = set(self.approvals())
            self._by_name = {
                t.name: t
                for t in self.tools()
                if t.name not in NOT_DELEGABLE and not t.name.startswith(SKILL_PREFIX) and t.name not in gated
            }
        return self._by_name

    def pick(self, names: list[str]) -> list[BaseTool]:
        """The named tools; a name the sub-agent cannot have is refused (the model reads why)."""
        have = self.delegable()
        wrong = [n for n in dict.fromkeys(names) if n not in have]
        if wrong:
            raise ToolException(
                f"a sub-agent cannot have {', '.join(wrong)}: it may only get tools you have, never "
                f"{SPAWN_AGENT}, skills, ask_human or tools that need approval. "
                f"Available: {', '.join(sorted(have)) or 'none'}."
            )
        return [have[n] for n in dict.fromkeys(names)]

    def model_for(self, task: str) -> BaseChatModel:
        if self.model_name.strip() != SCRIPTED:
            return self.model
        settings = dict(self.model_settings)
        if settings.get("subagent_script") is not None:
            settings["script"] = settings["subagent_script"]
        return build_chat_model(SCRIPTED, settings, handle=self.handle, trigger_text=task, trigger_count=1)

    def max_model_calls(self) -> int:
        value = self.model_settings.get("subagent_max_model_calls", DEFAULT_MAX_MODEL_CALLS)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1

    def next_label(self) -> str:
        return f"sub-{next(self._labels)}"

    def count(self, message: AIMessage) -> None:
        """A sub-agent's model call counts in the run's usage."""
        usage: dict[str, Any] = dict(message.usage_metadata or {})
        self.usage.model_calls += 1
        self.usage.input_tokens += int(usage.get("input_tokens", 0))
        self.usage.output_tokens += int(usage.get("output_tokens", 0))


async def run_subagent(
    runtime: ToolRuntime[RunContext], *, task: str, tools: list[BaseTool], instructions: str | None
) -> str:
    """Run one sub-agent to its final answer (capped), writing its steps as the run's events."""
    host = runtime.context.subagents
    if not isinstance(host, SubagentHost):
        raise ToolException("sub-agents are not available here (a sub-agent cannot spawn another)")
    if not task.strip():
        raise ToolException("the task is empty: say what the sub-agent should do")
    label = host.next_label()
    model = host.model_for(task)
    prompt = _BASE_PROMPT.format(label=label, handle=host.handle)
    if instructions and instructions.strip():
        prompt += "\n\n" + instructions.strip()
    limit = ModelCallLimitMiddleware(run_limit=host.max_model_calls(), exit_behavior="end")
    middleware: list[Any] = [limit, *host.middleware]
    agent: Any = create_agent(
        model, tools, system_prompt=prompt, middleware=middleware, context_schema=RunContext
    )
    context = RunContext(env=runtime.context.env, model=model, system_prompt=prompt)
    marks = {"agent": label, "parent": runtime.tool_call_id}

    async def drive() -> str:
        answer = ""
        config = {"recursion_limit": 4 * host.max_model_calls() + 10}
        stream = agent.astream(
            {"messages": [HumanMessage(task)]}, config, context=context, stream_mode="updates"
        )
        async for chunk in stream:
            events: Events = []
            for node, update in chunk.items():
                for message in (update or {}).get("messages", []) if isinstance(update, dict) else []:
                    if isinstance(message, AIMessage) and node == "model":
                        host.count(message)
                        answer = _steps(message, marks, events)
                    elif isinstance(message, ToolMessage):
                        events.append(("tool_result", {**_result(message), **marks}))
            if events:
                await host.record(events)
        return answer

    # A context of its own: the parent's graph config (its checkpointer, its token stream) stays out.
    answer = await asyncio.create_task(drive(), context=contextvars.Context())
    return _cap(answer.strip() or f"({label} finished without an answer)")


def _steps(message: AIMessage, marks: dict[str, Any], events: Events) -> str:
    """A sub-agent's model message as events; returns its text (the answer when it calls nothing)."""
    if not message.tool_calls:
        return message.text
    if message.text.strip():
        events.append(("text", {"text": message.text, **marks}))
    for call in message.tool_calls:
        events.append(
            ("tool_call", {"id": call.get("id"), "name": call["name"], "args": call["args"], **marks})
        )
    return ""


def _result(message: ToolMessage) -> dict[str, Any]:
    text = message.text
    content = (
        text if len(text) <= _STEP_CAP else text[:_STEP_CAP] + f"… [{len(text) - _STEP_CAP} more characters]"
    )
    return {
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "content": content,
        "status": message.status,
    }


def _cap(text: str) -> str:
    if len(text) <= ANSWER_CAP:
        return text
    return text[:ANSWER_CAP] + f"\n… [answer cut: {len(text) - ANSWER_CAP} more characters]"


@tool
async def spawn_agent(
    task: str, tools: list[str], runtime: ToolRuntime[RunContext], instructions: str | None = None
) -> str:
    """Hand one self-contained task to a focused sub-agent that has only the tools you name (a
    subset of yours) and return its final answer. Write the task fully: the sub-agent sees nothing
    of this thread but what you put in `task` and `instructions`."""
    host = runtime.context.subagents
    if not isinstance(host, SubagentHost):
        raise ToolException("sub-agents are not available here (a sub-agent cannot spawn another)")
    return await run_subagent(runtime, task=task, tools=host.pick(list(tools)), instructions=instructions)


spawn_agent.handle_tool_error = True
