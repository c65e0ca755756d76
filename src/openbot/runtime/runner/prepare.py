"""Preparing a run: read the thread once and unroll it into the model's context (DESIGN §6).

This is the only place a run reads thread state (invariant 7): the bot and its profile, the
thread and its participants, the messages, the roster, the bot's to-do list, and — for a resume —
what the human answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from openbot.config import Settings
from openbot.core.errors import NotFound
from openbot.core.history import HistoryMessage, Role, is_scoped, unroll
from openbot.core.prompt import PromptInput, RosterEntry, render_system_prompt
from openbot.runtime.runs.claim import Claim
from openbot.runtime.runs.resume import resume_payload
from openbot.runtime.tools.registry import BUILTIN_TOOLS
from openbot.store.db import Database
from openbot.store.models import Actor, BotProfile, Message, Run, Thread, ThreadParticipant, TodoList


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


@dataclass(frozen=True)
class _Reads:
    bot: Actor
    profile: BotProfile
    thread: Thread
    todo: TodoList | None
    default_bot: Actor | None
    people: list[Actor]
    history: list[HistoryMessage]
    roster: list[RosterEntry]


async def prepare(db: Database, settings: Settings, claim: Claim) -> Prepared:
    async with db.read() as s:
        reads = await _read(s, claim)
        resume = await resume_payload(s, claim.run_id) if claim.resume else None
        waiting = await s.get(Run, claim.run_id) if claim.resume else None
    interrupt_ids = tuple((waiting.interrupt or {}).get("interrupt_ids", ())) if waiting else ()
    triggers = frozenset(claim.trigger_ids)
    default_handle = reads.default_bot.handle if reads.default_bot else "chief_of_staff"
    scoped = is_scoped(reads.bot.handle, default_handle, [a.handle for a in reads.people if a.kind == "bot"])
    history = unroll(
        reads.history,
        bot=reads.bot.handle,
        triggers=triggers,
        scoped=scoped,
        token_budget=settings.history_token_budget,
        max_messages=settings.history_max_messages,
    )
    trigger_msgs = [m for m in reads.history if m.id in triggers]
    profile = reads.profile
    prompt = render_system_prompt(
        PromptInput(
            handle=reads.bot.handle,
            name=reads.bot.name,
            description=profile.description,
            instructions=profile.instructions,
            thread_title=reads.thread.title or reads.thread.id,
            participants=tuple(RosterEntry(a.handle, a.name, "", a.kind) for a in reads.people),
            default_bot=default_handle,
            roster=tuple(reads.roster),
            scoped=scoped,
            trigger_count=len(trigger_msgs),
            tools=tuple(dict.fromkeys(BUILTIN_TOOLS + tuple(profile.tools or ()))),
            approval_tools=tuple(profile.approval_tools or ()),
            working_directory=reads.thread.working_directory,
            todos=tuple((str(t.get("status", "")), str(t.get("content", ""))) for t in _todos(reads.todo)),
            history_note=history.note(),
        )
    )
    return Prepared(
        bot=reads.bot,
        profile=profile,
        thread=reads.thread,
        system_prompt=prompt,
        messages=[AIMessage(t.text) if t.role is Role.AI else HumanMessage(t.text) for t in history.turns],
        trigger_text="\n".join(m.content for m in trigger_msgs),
        trigger_count=len(trigger_msgs),
        resume_value=resume,
        interrupt_ids=interrupt_ids,
    )


def _todos(todo: TodoList | None) -> list[dict[str, Any]]:
    return [t for t in (todo.todos if todo else []) if isinstance(t, dict)]


async def _read(s: AsyncSession, claim: Claim) -> _Reads:
    # The bot, its profile, the thread, the bot's to-do list there and the default bot: one statement.
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
    if row is None:
        raise NotFound(f"the bot or thread of run {claim.run_id} is gone", {"run_id": claim.run_id})
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
    roster = (
        await s.execute(
            select(Actor.handle, Actor.name, BotProfile.description)
            .join(BotProfile, BotProfile.actor_id == Actor.id)
            .where(Actor.enabled.is_(True), Actor.deleted.is_(False), Actor.id != bot.id)
            .order_by(Actor.handle)
        )
    ).all()
    handles = {a.id: a.handle for a in people}
    missing = {r.sender_id for r in rows if r.sender_id and r.sender_id not in handles}
    if missing:
        for actor in await s.scalars(select(Actor).where(Actor.id.in_(missing))):
            handles[actor.id] = actor.handle
    history = [
        HistoryMessage(
            id=r.id,
            sender=handles.get(r.sender_id) if r.sender_id else None,
            sender_name=f"@{handles.get(r.sender_id, 'unknown')}" if r.sender_id else "system",
            content=r.content,
            mentions=tuple(r.mentions or ()),
        )
        for r in rows
    ]
    return _Reads(
        bot, profile, thread, todo, default_bot, people, history, [RosterEntry(h, n, d) for h, n, d in roster]
    )
