"""The runner: prepare the run, stream its agent, record what happens, hand back an Outcome.

It reads thread state once, when the run is prepared, and writes thread state only through
``runs.outcome.finish`` posting the reply (invariant 7). Run events are written as they happen,
in the order the model produced them (text, then the tool calls beside it, then their results).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from openbot.config import Settings
from openbot.core.errors import ModelError, OpenBotError
from openbot.core.model_errors import classify_model_error
from openbot.runtime.bus import Bus
from openbot.runtime.memory.context import snapshot
from openbot.runtime.runner.agent import AgentCache, past_the_limit
from openbot.runtime.runner.bounds import ToolBounds
from openbot.runtime.runner.checkpoints import DeferredSaver
from openbot.runtime.runner.models import build_chat_model
from openbot.runtime.runner.prepare import Prepared, prepare
from openbot.runtime.runs.claim import Claim
from openbot.runtime.runs.events import add_run_event, fenced
from openbot.runtime.runs.outcome import Outcome
from openbot.runtime.tools.context import RunContext, ToolEnv
from openbot.runtime.tools.registry import ToolRegistry
from openbot.runtime.tools.sandbox import Limits
from openbot.runtime.tools.subagents import SubagentHost
from openbot.runtime.tools.workspace import WorkspaceGrant
from openbot.store.db import Database
from openbot.store.models import PreparedContext

log = logging.getLogger(__name__)

PreparedHook = Callable[[Claim, Prepared], Awaitable[None]]
RunEvent = tuple[str, dict[str, Any]]


class Runner:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        bus: Bus,
        checkpointer: BaseCheckpointSaver[str],
        registry: ToolRegistry | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.bus = bus
        self.checkpointer = DeferredSaver(checkpointer)
        self.tools = registry or ToolRegistry.with_builtins()
        self.agents = AgentCache(settings, self.tools, self.checkpointer)
        self.workspaces_root = settings.resolved_workspaces_root()  # resolved once, not per run
        self.shell_limits = Limits(
            timeout_seconds=settings.shell_timeout_seconds,
            memory_mb=settings.shell_memory_mb,
            user=settings.shell_user or None,
        )
        #: What the first model call of each fresh run in flight here sees, from its preparation
        #: until its outcome is written (``GET /runs/{id}/context`` answers from it meanwhile).
        self.contexts: dict[str, PreparedContext] = {}
        #: Called after a run is prepared, before its model runs (tests observe or interleave here).
        self.on_prepared: list[PreparedHook] = []
        #: Called when a run's transcript is about to be deleted, the last step of its clean-up.
        self.on_forget: list[Callable[[str], Awaitable[None]]] = []

    async def execute(self, claim: Claim) -> Outcome:
        """Run the agent for a claim. Model and tool failures become a failed Outcome."""
        outcome = Outcome()
        try:
            prepared = await prepare(self.db, self.settings, claim)
            if not claim.resume:
                outcome.context = self.contexts[claim.run_id] = _context(claim, prepared, self.db)
            for hook in self.on_prepared:
                await hook(claim, prepared)
            await self._stream(claim, prepared, outcome)
            if outcome.interrupt is not None:
                await self.checkpointer.persist(claim.run_id)  # durable before the run says it waits
        except OpenBotError as exc:
            outcome.error = {"code": str(exc.code), "message": exc.message}
        except Exception as exc:  # supervision boundary: a turn must not take the worker down
            err: ModelError = classify_model_error(exc)
            log.warning("run %s failed: %r", claim.run_id, exc)
            outcome.error = {"code": str(err.code), "message": err.message, "type": type(exc).__name__}
        return outcome

    async def _stream(self, claim: Claim, prepared: Prepared, outcome: Outcome) -> None:
        model = build_chat_model(
            prepared.profile.model,
            dict(prepared.profile.model_settings or {}),
            handle=prepared.bot.handle,
            trigger_text=prepared.trigger_text,
            trigger_count=prepared.trigger_count,
        )
        profile = prepared.profile
        await self.tools.ready([*(profile.tools or ()), *(profile.approval_tools or ())])  # MCP starting
        agent = self.agents.agent_for(prepared.profile, model)
        env = ToolEnv(
            self.db, claim.bot_id, claim.bot_handle, claim.thread_id, claim.run_id, self._workspace(prepared)
        )
        context = RunContext(
            env=env,
            model=model,
            system_prompt=prepared.system_prompt,
            subagents=self._subagents(claim, prepared, model, outcome),
        )
        self.checkpointer.start(claim.run_id, fresh=not claim.resume)
        config = {"configurable": {"thread_id": claim.run_id}, "recursion_limit": 200}
        final: AIMessage | None = None
        # Checkpoints are written once, when the graph stops (a pause is persisted then, by
        # ``DeferredSaver.persist``); nothing reads a running run's transcript before.
        stream = agent.astream(
            _input(claim, prepared),
            config,
            context=context,
            stream_mode=["updates", "messages"],
            durability="exit",
        )
        async for mode, chunk in stream:
            if mode == "messages":
                self._delta(claim, chunk[0])
                continue
            for node, update in chunk.items():
                if node == "__interrupt__":
                    outcome.interrupt = _merge_interrupts(outcome.interrupt, _interrupt_view(update))
                    continue
                events: list[RunEvent] = []
                for message in (update or {}).get("messages", []) if isinstance(update, dict) else []:
                    if isinstance(message, AIMessage) and node == "model":
                        final = None if past_the_limit(message) else _on_ai_message(message, outcome, events)
                    elif isinstance(message, ToolMessage):
                        events.append(("tool_result", _tool_result(message)))
                await self._record(claim, events)
        if outcome.interrupt is None and final is not None:
            outcome.reply = final.text.strip() or None

    def _subagents(
        self, claim: Claim, prepared: Prepared, model: BaseChatModel, outcome: Outcome
    ) -> SubagentHost:
        """What the run lends spawn_agent and skills: its tools (worked out only if one is called)."""
        profile = prepared.profile
        return SubagentHost(
            tools=lambda: self.tools.for_bot(
                profile.tools or [], profile.workspace_access, profile.memory_enabled
            ),
            approvals=lambda: self.tools.expand(profile.approval_tools or []),
            model=model,
            model_name=profile.model,
            model_settings=dict(profile.model_settings or {}),
            handle=claim.bot_handle,
            record=lambda events: self._record(claim, events),
            usage=outcome,
            middleware=(ToolBounds(self.settings.tool_timeout_seconds, self.settings.tool_output_max_chars),),
        )

    def _workspace(self, prepared: Prepared) -> WorkspaceGrant:
        """The run's files and shell: its thread's working directory, its bot's access."""
        return WorkspaceGrant(
            root=self.workspaces_root,
            working_directory=prepared.thread.working_directory,
            thread_id=prepared.thread.id,
            access=prepared.profile.workspace_access,
            limits=self.shell_limits,
        )

    def _delta(self, claim: Claim, message: Any) -> None:
        """Token deltas go out live only (never journalled)."""
        if isinstance(message, AIMessageChunk) and message.text:
            data = {
                "run_id": claim.run_id,
                "thread_id": claim.thread_id,
                "bot": claim.bot_handle,
                "delta": message.text,
            }
            self.bus.live("text.delta", data, claim.thread_id)

    async def _record(self, claim: Claim, events: list[RunEvent]) -> None:
        """Append events to the run in one fenced transaction, in the order given."""
        if not events:
            return
        async with self.db.transaction() as s:
            run, _bot, _thread = await fenced(s, claim.run_id, claim.token)
            for type_, payload in events:
                await add_run_event(s, run, type_, payload)

    async def forget(self, run_id: str, *, durable: bool = True) -> None:
        """Delete a terminal run's transcript (``durable=False``: it never left memory)."""
        for hook in self.on_forget:
            await hook(run_id)
        try:
            if durable:
                await self.checkpointer.adelete_thread(run_id)
            else:
                await self.checkpointer.discard(run_id)
        except Exception:  # recorded, never fatal: a leftover checkpoint is only disk space
            log.exception("could not delete checkpoint of run %s", run_id)


def _context(claim: Claim, prepared: Prepared, db: Database) -> PreparedContext:
    """What the first model call will see (written with the run's outcome)."""
    return snapshot(
        claim.run_id,
        system=prepared.system_prompt,
        messages=prepared.messages,
        memories=[{"id": m.id, "content": m.content, "score": m.score} for m in prepared.memories],
        scoped=prepared.scoped,
        omitted=prepared.omitted,
        at=db.clock.now(),
    )


def _input(claim: Claim, prepared: Prepared) -> Any:
    if not claim.resume:
        return {"messages": prepared.messages}
    # Resume by interrupt id: a bare value is refused when several interrupts are pending.
    ids = prepared.interrupt_ids
    return Command(resume={i: prepared.resume_value for i in ids} if ids else prepared.resume_value)


def _on_ai_message(message: AIMessage, outcome: Outcome, events: list[RunEvent]) -> AIMessage | None:
    """Count the model call; a message with tool calls adds its text and calls to ``events``."""
    outcome.model_calls += 1
    usage: dict[str, Any] = dict(message.usage_metadata or {})
    outcome.input_tokens += int(usage.get("input_tokens", 0))
    outcome.output_tokens += int(usage.get("output_tokens", 0))
    if not message.tool_calls:
        return message
    if message.text.strip():
        events.append(("text", {"text": message.text}))
    for call in message.tool_calls:
        events.append(("tool_call", {"id": call.get("id"), "name": call["name"], "args": call["args"]}))
    return None


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    return {
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "content": _clip(message.text),
        "status": message.status,
    }


def _merge_interrupts(seen: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Parallel tool calls interrupt one by one: keep them all."""
    if seen is None:
        return new
    ids = [*seen["interrupt_ids"], *new["interrupt_ids"]]
    return {**seen, "interrupt_ids": list(dict.fromkeys(ids))}


def _interrupt_view(interrupts: Any) -> dict[str, Any]:
    """The run's ``interrupt`` (API shape) from LangGraph's pending interrupts; ids kept for resuming."""
    pending = list(interrupts) if isinstance(interrupts, (list, tuple)) else [interrupts]
    ids = [i.id for i in pending if getattr(i, "id", None)]
    value = getattr(pending[0], "value", pending[0]) if pending else None
    if isinstance(value, dict) and "action_requests" in value:
        view: dict[str, Any] = {
            "kind": "approval",
            "actions": [{"name": a["name"], "args": a.get("args", {})} for a in value["action_requests"]],
        }
    elif isinstance(value, dict) and value.get("kind") == "question":
        view = {"kind": "question", "question": str(value.get("question", ""))}
    else:
        view = {"kind": "question", "question": str(value)}
    return {**view, "interrupt_ids": ids}


def _clip(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"
