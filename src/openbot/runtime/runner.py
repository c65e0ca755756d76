"""The runner: unroll the thread, assemble the agent, stream it, and hand back an Outcome.

It reads thread state once, when the run is prepared, and writes thread state only through
``runs.finish`` posting the reply (invariant 7).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    HumanInTheLoopMiddleware,
    ModelCallLimitMiddleware,
    ModelRequest,
    ModelRetryMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command
from sqlalchemy import select
from sqlalchemy.orm import aliased

from openbot.config import Settings
from openbot.core.errors import ModelError, OpenBotError
from openbot.core.history import HistoryMessage, Role, is_scoped, unroll
from openbot.core.model_errors import classify_model_error
from openbot.core.prompt import PromptInput, RosterEntry, render_system_prompt
from openbot.runtime.bus import Bus
from openbot.runtime.checkpoints import DeferredSaver
from openbot.runtime.models import build_chat_model
from openbot.runtime.runs import Claim, Outcome, add_run_event, fenced_run, resume_payload
from openbot.runtime.tools import BUILTIN_TOOLS, RunContext, ToolEnv, build_tools
from openbot.store.db import Database
from openbot.store.models import Actor, BotProfile, Message, Run, Thread, ThreadParticipant, TodoList

log = logging.getLogger(__name__)


@dataclass
class Prepared:
    bot: Actor
    profile: BotProfile
    thread: Thread
    system_prompt: str
    messages: list[BaseMessage]
    trigger_text: str
    trigger_count: int
    resume_value: Any = None
    interrupt_ids: tuple[str, ...] = ()


class Runner:
    def __init__(
        self, db: Database, settings: Settings, bus: Bus, checkpointer: BaseCheckpointSaver[str]
    ) -> None:
        self.db = db
        self.settings = settings
        self.bus = bus
        self.checkpointer = DeferredSaver(checkpointer)
        self._tools = build_tools()
        self._tool_names = {t.name for t in self._tools}
        self._agents: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    async def execute(self, claim: Claim) -> Outcome:
        """Run the agent for a claim. Model and tool failures become a failed Outcome."""
        outcome = Outcome()
        try:
            prepared = await self.prepare(claim)
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

    async def prepare(self, claim: Claim) -> Prepared:
        async with self.db.read() as s:
            # The bot, its profile, the thread, the bot's to-do list there and the thread's default
            # bot, in one statement.
            default = aliased(Actor)
            row = (
                await s.execute(
                    select(Actor, BotProfile, Thread, TodoList, default)
                    .join(BotProfile, BotProfile.actor_id == Actor.id)
                    .join(Thread, Thread.id == claim.thread_id)
                    .outerjoin(TodoList, (TodoList.thread_id == Thread.id) & (TodoList.bot_id == Actor.id))
                    .outerjoin(default, default.id == Thread.default_bot_id)
                    .where(Actor.id == claim.bot_id)
                )
            ).one_or_none()
            assert row is not None
            bot, profile, thread, todo, default_bot = row
            people = list(
                await s.scalars(
                    select(Actor)
                    .join(ThreadParticipant, ThreadParticipant.actor_id == Actor.id)
                    .where(ThreadParticipant.thread_id == thread.id)
                    .order_by(ThreadParticipant.joined_at)
                )
            )
            rows = (
                await s.execute(
                    select(Message.id, Message.sender_id, Message.content, Message.mentions)
                    .where(Message.thread_id == thread.id)
                    .order_by(Message.id)
                )
            ).all()
            roster_rows = (
                await s.execute(
                    select(Actor.handle, Actor.name, BotProfile.description)
                    .join(BotProfile, BotProfile.actor_id == Actor.id)
                    .where(Actor.enabled.is_(True), Actor.deleted.is_(False), Actor.id != bot.id)
                    .order_by(Actor.handle)
                )
            ).all()
            resume = await resume_payload(s, claim.run_id) if claim.resume else None
            waiting = await s.get(Run, claim.run_id) if claim.resume else None
            interrupt_ids = tuple((waiting.interrupt or {}).get("interrupt_ids", ())) if waiting else ()
            handles = {a.id: a.handle for a in people}
            missing = {r.sender_id for r in rows if r.sender_id and r.sender_id not in handles}
            if missing:
                for actor in await s.scalars(select(Actor).where(Actor.id.in_(missing))):
                    handles[actor.id] = actor.handle

        triggers = frozenset(claim.trigger_ids)
        history_messages = [
            HistoryMessage(
                id=r.id,
                sender=handles.get(r.sender_id) if r.sender_id else None,
                sender_name=f"@{handles.get(r.sender_id, 'unknown')}" if r.sender_id else "system",
                content=r.content,
                mentions=tuple(r.mentions or ()),
            )
            for r in rows
        ]
        default_handle = default_bot.handle if default_bot else "chief_of_staff"
        bots_here = [a.handle for a in people if a.kind == "bot"]
        scoped = is_scoped(bot.handle, default_handle, bots_here)
        history = unroll(
            history_messages,
            bot=bot.handle,
            triggers=triggers,
            scoped=scoped,
            token_budget=self.settings.history_token_budget,
            max_messages=self.settings.history_max_messages,
        )
        trigger_msgs = [m for m in history_messages if m.id in triggers]
        tool_names = BUILTIN_TOOLS + tuple(profile.tools or ())
        prompt = render_system_prompt(
            PromptInput(
                handle=bot.handle,
                name=bot.name,
                description=profile.description,
                instructions=profile.instructions,
                thread_title=thread.title or thread.id,
                participants=tuple(RosterEntry(a.handle, a.name, "", a.kind) for a in people),
                default_bot=default_handle,
                roster=tuple(RosterEntry(h, n, d) for h, n, d in roster_rows),
                scoped=scoped,
                trigger_count=len(trigger_msgs),
                tools=tuple(dict.fromkeys(tool_names)),
                approval_tools=tuple(profile.approval_tools or ()),
                working_directory=thread.working_directory,
                todos=tuple(
                    (str(t.get("status", "")), str(t.get("content", "")))
                    for t in (todo.todos if todo else [])
                ),
                history_note=history.note(),
            )
        )
        messages: list[BaseMessage] = [
            AIMessage(turn.text) if turn.role is Role.AI else HumanMessage(turn.text)
            for turn in history.turns
        ]
        return Prepared(
            bot=bot,
            profile=profile,
            thread=thread,
            system_prompt=prompt,
            messages=messages,
            trigger_text="\n".join(m.content for m in trigger_msgs),
            trigger_count=len(trigger_msgs),
            resume_value=resume,
            interrupt_ids=interrupt_ids,
        )

    def build_model(self, prepared: Prepared) -> BaseChatModel:
        return build_chat_model(
            prepared.profile.model,
            dict(prepared.profile.model_settings or {}),
            handle=prepared.bot.handle,
            trigger_text=prepared.trigger_text,
            trigger_count=prepared.trigger_count,
        )

    def agent_for(self, prepared: Prepared, model: BaseChatModel) -> Any:
        """The bot's compiled agent, cached per profile version (the run's model is swapped in)."""
        profile = prepared.profile
        settings = dict(profile.model_settings or {})
        limit = int(settings.get("max_model_calls", self.settings.max_model_calls))
        approvals = tuple(name for name in (profile.approval_tools or []) if name in self._tool_names)
        key = (prepared.bot.id, profile.version, approvals, limit)
        agent = self._agents.get(key)
        if agent is not None:
            self._agents.move_to_end(key)
            return agent
        middleware: list[Any] = [
            _RunScoped(),
            ModelCallLimitMiddleware(run_limit=limit, exit_behavior="end"),
            ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=self.settings.context_trigger_tokens)]),
            ModelRetryMiddleware(
                max_retries=2, retry_on=_retryable, on_failure="error", initial_delay=1.0, max_delay=20.0
            ),
        ]
        if approvals:
            middleware.insert(
                1,
                HumanInTheLoopMiddleware(
                    interrupt_on={
                        name: {"allowed_decisions": ["approve", "edit", "reject"]} for name in approvals
                    }
                ),
            )
        agent = create_agent(
            model,
            self._tools,
            middleware=middleware,
            context_schema=RunContext,
            checkpointer=self.checkpointer,
        )
        self._agents[key] = agent
        while len(self._agents) > 256:
            self._agents.popitem(last=False)
        return agent

    async def _stream(self, claim: Claim, prepared: Prepared, outcome: Outcome) -> None:
        model = self.build_model(prepared)
        agent = self.agent_for(prepared, model)
        context = RunContext(
            env=ToolEnv(self.db, claim.bot_id, claim.bot_handle, claim.thread_id, claim.run_id),
            model=model,
            system_prompt=prepared.system_prompt,
        )
        self.checkpointer.start(claim.run_id, fresh=not claim.resume)
        config = {"configurable": {"thread_id": claim.run_id}, "recursion_limit": 200}
        payload: Any = {"messages": prepared.messages}
        if claim.resume:
            # Resume by interrupt id: a bare value is refused when several interrupts are pending.
            ids = prepared.interrupt_ids
            payload = Command(
                resume={i: prepared.resume_value for i in ids} if ids else prepared.resume_value
            )
        final: AIMessage | None = None
        stream = agent.astream(payload, config, context=context, stream_mode=["updates", "messages"])
        async for mode, chunk in stream:
            if mode == "messages":
                message = chunk[0]
                if isinstance(message, AIMessageChunk) and message.text:
                    self.bus.live(
                        "text.delta",
                        {
                            "run_id": claim.run_id,
                            "thread_id": claim.thread_id,
                            "bot": claim.bot_handle,
                            "delta": message.text,
                        },
                        claim.thread_id,
                    )
                continue
            for node, update in chunk.items():
                if node == "__interrupt__":
                    seen = outcome.interrupt
                    outcome.interrupt = _interrupt_view(update)
                    if seen is not None:  # parallel tool calls interrupt one by one: keep them all
                        ids = [*seen["interrupt_ids"], *outcome.interrupt["interrupt_ids"]]
                        outcome.interrupt = {**seen, "interrupt_ids": list(dict.fromkeys(ids))}
                    continue
                for message in (update or {}).get("messages", []) if isinstance(update, dict) else []:
                    if isinstance(message, AIMessage) and node == "model":
                        final = await self._on_ai_message(claim, message, outcome)
                    elif isinstance(message, ToolMessage):
                        await self._record(
                            claim,
                            "tool_result",
                            {
                                "tool_call_id": message.tool_call_id,
                                "name": message.name,
                                "content": _clip(message.text),
                                "status": message.status,
                            },
                        )
        if outcome.interrupt is None and final is not None:
            outcome.reply = final.text.strip() or None

    async def _on_ai_message(self, claim: Claim, message: AIMessage, outcome: Outcome) -> AIMessage | None:
        outcome.model_calls += 1
        usage = message.usage_metadata or {}
        outcome.input_tokens += int(usage.get("input_tokens", 0))
        outcome.output_tokens += int(usage.get("output_tokens", 0))
        if message.tool_calls:
            if message.text.strip():
                outcome.events.append(("text", {"text": message.text}))
            for call in message.tool_calls:
                await self._record(
                    claim, "tool_call", {"id": call.get("id"), "name": call["name"], "args": call["args"]}
                )
            return None
        return message

    async def _record(self, claim: Claim, type_: str, payload: dict[str, Any]) -> None:
        async with self.db.transaction() as s:
            run: Run = await fenced_run(s, claim)
            await add_run_event(s, run, type_, payload)

    async def forget(self, run_id: str, *, durable: bool = True) -> None:
        """Delete a terminal run's transcript (``durable=False``: it never left memory)."""
        try:
            if durable:
                await self.checkpointer.adelete_thread(run_id)
            else:
                await self.checkpointer.discard(run_id)
        except Exception:  # recorded, never fatal: a leftover checkpoint is only disk space
            log.exception("could not delete checkpoint of run %s", run_id)


class _RunScoped(AgentMiddleware[Any, RunContext]):
    """Swap the run's own model and system prompt into every model call of a cached agent."""

    def wrap_model_call(self, request: ModelRequest[RunContext], handler: Callable[..., Any]) -> Any:
        ctx = request.runtime.context
        return handler(request.override(model=ctx.model, system_message=SystemMessage(ctx.system_prompt)))

    async def awrap_model_call(self, request: ModelRequest[RunContext], handler: Callable[..., Any]) -> Any:
        ctx = request.runtime.context
        return await handler(
            request.override(model=ctx.model, system_message=SystemMessage(ctx.system_prompt))
        )


def _retryable(exc: Exception) -> bool:
    return classify_model_error(exc).retryable


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
