"""Assembling a bot's agent: LangChain ``create_agent`` with OpenBot's middleware (DESIGN §4).

Compiled agents are cached by their shape (the tools, approvals and limits they are built with);
the run's own model and system prompt are swapped into every model call from the runtime
context, so one compiled agent serves every run of every bot of that shape.

The run's model-call limit is kept by the same wrapper, counted in the run's context, rather than
by LangChain's ``ModelCallLimitMiddleware``: that one counts in the graph's state, with a node
before and one after every model call, and each node is a superstep of the graph (a quarter of a
short run's agent time; ``docs/decisions.md``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    HumanInTheLoopMiddleware,
    InterruptOnConfig,
    ModelRequest,
    ModelResponse,
    ModelRetryMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from openbot.config import Settings
from openbot.core.model_errors import classify_model_error
from openbot.runtime.runner import tracing
from openbot.runtime.runner.bounds import ToolBounds
from openbot.runtime.tools.context import RunContext
from openbot.runtime.tools.registry import ToolRegistry
from openbot.store.models import BotProfile

_CACHED_AGENTS = 256
# Marks the message that stands in for a model call past the run's limit (``past_the_limit``).
_LIMIT_MARK = "openbot_model_call_limit"


class AgentCache:
    """Compiled agents by shape, least recent out.

    The shape is everything the graph is built from: the tools the profile grants (by name, with
    the registry's version, so a tool appearing or leaving, an MCP server up or down, rebuilds),
    its approval tools and its model-call limit. The model and the system prompt are not part of
    it (``_RunScoped`` swaps the run's own into every call), so a team of bots with the same tools
    compiles one graph, not one per bot: compiling costs several milliseconds, a run about as much.
    """

    def __init__(
        self, settings: Settings, registry: ToolRegistry, checkpointer: BaseCheckpointSaver[str]
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.checkpointer = checkpointer
        self._agents: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        tracing.install()  # every middleware hook of these agents is wrapped in ``traceable``

    def __len__(self) -> int:
        """Compiled agents held."""
        return len(self._agents)

    def agent_for(self, profile: BotProfile, model: BaseChatModel) -> Any:
        settings = dict(profile.model_settings or {})
        limit = int(settings.get("max_model_calls", self.settings.max_model_calls))
        approvals = self.registry.expand(profile.approval_tools or [])
        grants = (tuple(profile.tools or ()), profile.workspace_access, profile.memory_enabled)
        key = (grants, approvals, limit, self.registry.version)
        agent = self._agents.get(key)
        if agent is not None:
            self._agents.move_to_end(key)
            return agent
        tools: list[BaseTool] = self.registry.for_bot(
            profile.tools or [], profile.workspace_access, profile.memory_enabled
        )
        agent = create_agent(
            model,
            tools,
            middleware=self._middleware(limit, approvals),
            context_schema=RunContext,
            checkpointer=self.checkpointer,
        )
        self._agents[key] = agent
        while len(self._agents) > _CACHED_AGENTS:
            self._agents.popitem(last=False)
        return agent

    def _middleware(self, limit: int, approvals: tuple[str, ...]) -> list[Any]:
        middleware: list[Any] = [
            _RunScoped(limit, ClearToolUsesEdit(trigger=self.settings.context_trigger_tokens)),
            ModelRetryMiddleware(
                max_retries=2, retry_on=_retryable, on_failure="error", initial_delay=1.0, max_delay=20.0
            ),
            ToolBounds(self.settings.tool_timeout_seconds, self.settings.tool_output_max_chars),
        ]
        if approvals:
            allowed: InterruptOnConfig = {"allowed_decisions": ["approve", "edit", "reject"]}
            middleware.insert(1, HumanInTheLoopMiddleware(interrupt_on={name: allowed for name in approvals}))
        return middleware


class _ContextEditing(ContextEditingMiddleware[Any]):
    """LangChain's context editing, which deep-copies the whole context on every model call to
    decide whether to edit it. Below every edit's trigger (by the same approximate count it uses)
    no edit applies, so the call goes straight through without the copy."""

    def _small(self, request: Any) -> bool:
        lowest = min((getattr(edit, "trigger", 0) for edit in self.edits), default=0)
        approximate = self.token_count_method == "approximate"
        return approximate and count_tokens_approximately(request.messages) <= lowest

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request) if self._small(request) else super().wrap_model_call(request, handler)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        if self._small(request):
            return await handler(request)
        return await super().awrap_model_call(request, handler)


class _RunScoped(AgentMiddleware[Any, RunContext]):
    """Swap the run's own model and system prompt into every model call of a cached agent, edit
    the context once it is large, and stop the run at its model-call limit.

    A call past the limit is not made: a stand-in message without tool calls takes its place, so
    the agent ends there (as LangChain's ``ModelCallLimitMiddleware`` with ``exit_behavior="end"``
    does). The runner counts neither it nor its text (:func:`past_the_limit`). The count is the
    invocation's, as LangChain's run limit is: a resumed run starts again from zero.

    Context editing (:class:`_ContextEditing`) runs inside this middleware rather than as one of
    its own: one layer, and one traced hook, less on every model call.
    """

    def __init__(self, limit: int, edit: ClearToolUsesEdit) -> None:
        super().__init__()
        self.limit = limit
        self.editing = _ContextEditing(edits=[edit])

    def wrap_model_call(self, request: ModelRequest[RunContext], handler: Callable[..., Any]) -> Any:
        ctx = request.runtime.context
        if ctx.calls.made >= self.limit:
            return self._stand_in(ctx.calls.made)
        request = request.override(model=ctx.model, system_message=SystemMessage(ctx.system_prompt))
        response = self.editing.wrap_model_call(request, handler)
        ctx.calls.made += 1
        return response

    async def awrap_model_call(self, request: ModelRequest[RunContext], handler: Callable[..., Any]) -> Any:
        ctx = request.runtime.context
        if ctx.calls.made >= self.limit:
            return self._stand_in(ctx.calls.made)
        request = request.override(model=ctx.model, system_message=SystemMessage(ctx.system_prompt))
        response = await self.editing.awrap_model_call(request, handler)
        ctx.calls.made += 1
        return response

    def _stand_in(self, made: int) -> ModelResponse[Any]:
        text = f"Model call limits exceeded: run limit ({made}/{self.limit})"
        return ModelResponse(result=[AIMessage(text, response_metadata={_LIMIT_MARK: True})])


def past_the_limit(message: BaseMessage) -> bool:
    """Whether ``message`` stands in for a model call past the run's limit (no call was made)."""
    return bool(message.response_metadata.get(_LIMIT_MARK))


def _retryable(exc: Exception) -> bool:
    return classify_model_error(exc).retryable
