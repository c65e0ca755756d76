"""Preparing a run: read the thread once and unroll it into the model's context (DESIGN §6).

This is the only place a run reads thread state (invariant 7): the bot and its profile, the
thread and its participants, the messages, the roster, the bot's to-do list, and — for a resume —
what the human answered.

The messages read are bounded by the history window, not by the thread: the newest in view,
newest first, until the window closes (:func:`openbot.core.history.window_closed`), this run's
triggers, and a count of the thread capped at ``_COUNT_CAP`` for the left-out note (read with
the first page).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from sqlalchemy import Select, Text, bindparam, cast, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from openbot.config import Settings
from openbot.core.errors import NotFound
from openbot.core.history import HistoryMessage, Role, Turn, is_scoped, unroll, window_closed, window_rows
from openbot.core.mentions import is_valid_handle
from openbot.core.prompt import PromptInput, RosterEntry, render_system_prompt
from openbot.runtime.delivery.recipients import ACTOR_COLUMNS
from openbot.runtime.memory.store import Hit, relevant
from openbot.runtime.runs.claim import Claim
from openbot.runtime.runs.resume import resume_payload
from openbot.runtime.tools.memory import MEMORY_TOOLS
from openbot.runtime.tools.registry import BUILTIN_TOOLS, workspace_tools
from openbot.store import fast
from openbot.store.columns import Columns
from openbot.store.db import Database
from openbot.store.models import (
    Actor,
    BotProfile,
    Memory,
    Message,
    Run,
    Thread,
    ThreadParticipant,
    TodoList,
)

_COUNT_CAP = 1_000  # messages counted for the left-out note; past it the note says "at least"
_COLUMNS = (Message.id, Message.sender_id, Message.content, Message.mentions)


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
    memories: tuple[Hit, ...] = ()  # injected into the system prompt, most relevant first
    scoped: bool = False
    omitted: int = 0  # messages of the thread left out of ``messages``


@dataclass(frozen=True)
class _Window:
    newest: list[HistoryMessage]  # the thread's newest messages in view, enough to fill the window
    triggers: list[HistoryMessage]  # this run's triggers, oldest first (older ones too)
    size: int  # messages in the thread, counted up to the cap
    at_least: bool  # the count reached the cap


@dataclass(frozen=True)
class _Reads:
    bot: Actor
    profile: BotProfile
    thread: Thread
    todo: TodoList | None
    default_handle: str
    people: list[Actor]
    scoped: bool
    window: _Window
    roster: list[RosterEntry]
    remembers: bool  # the bot has bot-level memories to inject


async def prepare(db: Database, settings: Settings, claim: Claim) -> Prepared:
    async with db.reader() as r:
        reads = await _read(r, settings, claim)
        trigger_text = "\n".join(m.content for m in reads.window.triggers)
        # The bot's own bot-level memories, ranked by relevance to the triggers: one statement
        # (none for a bot that has none yet: the head read says so).
        remembering = reads.profile.memory_enabled and reads.remembers
        memories = await relevant(r, claim.bot_id, trigger_text) if remembering else []
    resume, waiting = None, None
    if claim.resume:  # what the human answered, and the question's ids
        async with db.read() as s:
            resume = await resume_payload(s, claim.run_id)
            waiting = await s.get(Run, claim.run_id)
    interrupt_ids = tuple((waiting.interrupt or {}).get("interrupt_ids", ())) if waiting else ()
    history = unroll(
        reads.window.newest,
        bot=reads.bot.handle,
        triggers=frozenset(claim.trigger_ids),
        scoped=reads.scoped,
        token_budget=settings.history_token_budget,
        max_messages=settings.history_max_messages,
        thread_size=reads.window.size,
        at_least=reads.window.at_least,
    )
    trigger_msgs = reads.window.triggers
    profile = reads.profile
    prompt = render_system_prompt(
        PromptInput(
            handle=reads.bot.handle,
            name=reads.bot.name,
            description=profile.description,
            instructions=profile.instructions,
            thread_title=reads.thread.title or reads.thread.id,
            participants=tuple(RosterEntry(a.handle, a.name, "", a.kind) for a in reads.people),
            default_bot=reads.default_handle,
            roster=tuple(reads.roster),
            scoped=reads.scoped,
            trigger_count=len(trigger_msgs),
            tools=_tools(profile),
            approval_tools=tuple(profile.approval_tools or ()),
            working_directory=reads.thread.working_directory,
            todos=tuple((str(t.get("status", "")), str(t.get("content", ""))) for t in _todos(reads.todo)),
            history_note=history.note(),
            memories=tuple(m.content for m in memories),
        )
    )
    return Prepared(
        bot=reads.bot,
        profile=profile,
        thread=reads.thread,
        system_prompt=prompt,
        messages=_messages_of(history.turns),
        trigger_text=trigger_text,
        trigger_count=len(trigger_msgs),
        resume_value=resume,
        interrupt_ids=interrupt_ids,
        memories=tuple(memories),
        scoped=history.scoped,
        omitted=history.left_out,
    )


def _messages_of(turns: Iterable[Turn]) -> list[BaseMessage]:
    """The turns as the agent's input. Each has an id of its own (unique in the input, which is all
    LangGraph's message reducer asks): without one the reducer makes a UUID for every message of
    the window, on every run."""
    return [
        AIMessage(t.text, id=f"turn-{i}") if t.role is Role.AI else HumanMessage(t.text, id=f"turn-{i}")
        for i, t in enumerate(turns)
    ]


def _tools(profile: BotProfile) -> tuple[str, ...]:
    memory = MEMORY_TOOLS if profile.memory_enabled else ()
    files = workspace_tools(profile.workspace_access)
    return tuple(dict.fromkeys(BUILTIN_TOOLS + memory + files + tuple(profile.tools or ())))


def _todos(todo: TodoList | None) -> list[dict[str, Any]]:
    return [t for t in (todo.todos if todo else []) if isinstance(t, dict)]


# The hot statements are built once; a run binds its ids (building a statement costs more than
# SQLite takes to run it).
_DEFAULT = aliased(Actor)
_BOT = Columns(Actor, "bot_")
_PROFILE = Columns(BotProfile, "profile_")
_THREAD = Columns(Thread, "thread_")
_TODO = Columns(TodoList, "todo_")
# Whether the bot has a memory prepare could inject (``memory.store.relevant``'s rows): an index
# probe in the head read instead of a search that would find nothing.
_REMEMBERS = exists().where(
    Memory.bot_id == Actor.id, Memory.lifecycle == "active", Memory.thread_id.is_(None)
)
# Rows are records with the ORM classes' attribute names (read only; the session tracks none).
_HEAD = fast.Sql(
    select(*_BOT.columns, *_PROFILE.columns, *_THREAD.columns, *_TODO.columns)
    .add_columns(_DEFAULT.handle.label("default"), _REMEMBERS.label("remembers"))
    .select_from(Actor)
    .join(BotProfile, BotProfile.actor_id == Actor.id)
    .join(Thread, Thread.id == bindparam("thread_id"))
    .outerjoin(TodoList, (TodoList.thread_id == Thread.id) & (TodoList.bot_id == Actor.id))
    .outerjoin(_DEFAULT, _DEFAULT.id == Thread.default_bot_id)
    .where(Actor.id == bindparam("bot_id"))
)
# The thread's participants (whatever their state) and every enabled bot (the roster), in one read.
_PEOPLE = fast.Sql(
    select(*ACTOR_COLUMNS, ThreadParticipant.joined_at, BotProfile.description)
    .outerjoin(
        ThreadParticipant,
        (ThreadParticipant.actor_id == Actor.id) & (ThreadParticipant.thread_id == bindparam("thread_id")),
    )
    .outerjoin(BotProfile, BotProfile.actor_id == Actor.id)
    .where(
        ThreadParticipant.thread_id.is_not(None)
        | (BotProfile.actor_id.is_not(None) & Actor.enabled.is_(True) & Actor.deleted.is_(False))
    )
)
_IN_VIEW = or_(
    Message.sender_id == bindparam("bot_id"),
    Message.id.in_(bindparam("triggers", expanding=True)),
    cast(Message.mentions, Text).like(bindparam("quoted"), escape="/"),
)


# The thread's size, counted up to ``upto`` messages.
_SIZE = select(func.count()).select_from(
    select(Message.id).where(Message.thread_id == bindparam("thread_id")).limit(bindparam("upto")).subquery()
)


def _page(*, scoped: bool, paged: bool) -> Select[*tuple[Any, ...]]:
    """A page of the window, newest first; the first page also carries the thread's size (one
    statement instead of two: SQLite and PostgreSQL evaluate the uncorrelated subquery once)."""
    stmt: Select[*tuple[Any, ...]] = select(*_COLUMNS).where(Message.thread_id == bindparam("thread_id"))
    if scoped:
        stmt = stmt.where(_IN_VIEW)
    if paged:
        stmt = stmt.where(Message.id < bindparam("before"))
    else:
        stmt = stmt.add_columns(_SIZE.scalar_subquery().label("size"))
    return stmt.order_by(Message.id.desc()).limit(bindparam("limit"))


_BOTH = [(False, False), (False, True), (True, False), (True, True)]
_PAGES = {(scoped, paged): fast.Sql(_page(scoped=scoped, paged=paged)) for scoped, paged in _BOTH}
_BY_ID = fast.Sql(
    select(*_COLUMNS)
    .where(Message.thread_id == bindparam("thread_id"), Message.id.in_(bindparam("ids", expanding=True)))
    .order_by(Message.id)
)
_HANDLES = fast.Sql(select(Actor.id, Actor.handle).where(Actor.id.in_(bindparam("ids", expanding=True))))
_COUNT = fast.Sql(_SIZE)


async def _read(s: AsyncSession | fast.Reader, settings: Settings, claim: Claim) -> _Reads:
    ids = {"bot_id": claim.bot_id, "thread_id": claim.thread_id}
    head, everyone = await fast.execute_all(s, [(_HEAD, ids), (_PEOPLE, ids)])  # one round trip
    if not head:
        raise NotFound(f"the bot or thread of run {claim.run_id} is gone", {"run_id": claim.run_id})
    row = head[0]
    bot, profile, thread, todo = _BOT.of(row), _PROFILE.of(row), _THREAD.of(row), _TODO.of(row)
    people = sorted((r for r in everyone if r.joined_at is not None), key=lambda r: r.joined_at)
    listed = [a for a in everyone if _listed(a) and a.id != bot.id]
    roster = sorted((RosterEntry(a.handle, a.name, a.description or "") for a in listed), key=_by_handle)
    default_handle = row.default or "chief_of_staff"
    scoped = is_scoped(bot.handle, default_handle, [a.handle for a in people if a.kind == "bot"])
    handles = {a.id: a.handle for a in people}
    window = await _read_window(s, settings, claim, bot, scoped, handles)
    return _Reads(
        bot, profile, thread, todo, default_handle, people, scoped, window, roster, bool(row.remembers)
    )


def _by_handle(entry: RosterEntry) -> str:
    return entry.handle


def _listed(actor: Actor) -> bool:
    """The roster lists enabled bots only (participants come back whatever their state)."""
    return actor.kind == "bot" and actor.enabled and not actor.deleted


async def _read_window(
    s: AsyncSession | fast.Reader,
    settings: Settings,
    claim: Claim,
    bot: Actor,
    scoped: bool,
    handles: dict[str, str],
) -> _Window:
    """The newest messages in view, a page at a time from the end, until the window closes.

    A page holds :func:`window_rows` messages, which always close the window: one page is enough
    unless the filter let through messages out of view (an invalid handle is not filtered here).
    """
    triggers = frozenset(claim.trigger_ids)
    scoped_sql = scoped and is_valid_handle(bot.handle)
    page_size = window_rows(triggers=triggers, max_messages=settings.history_max_messages)
    cap = max(_COUNT_CAP, page_size)  # more than a window shows, so "at least" is never "at least 0"
    params: dict[str, Any] = {"thread_id": claim.thread_id, "limit": page_size, "upto": cap + 1}
    if scoped_sql:
        quoted = '%"' + bot.handle.replace("_", "/_") + '"%'
        params.update(bot_id=bot.id, triggers=sorted(triggers), quoted=quoted)
    newest: list[HistoryMessage] = []
    size: int | None = None  # the thread's size, from the first page (if it had a row)
    while True:
        if newest:
            params["before"] = newest[0].id
        page = await fast.execute(s, _PAGES[scoped_sql, bool(newest)], params)
        if size is None and page:
            size = int(page[0].size)
        newest[:0] = await _messages(s, reversed(page), handles)
        closed = window_closed(
            newest,
            bot=bot.handle,
            triggers=triggers,
            scoped=scoped,
            token_budget=settings.history_token_budget,
            max_messages=settings.history_max_messages,
        )
        if closed or len(page) < page_size:
            break
    # Triggers are in view: any not read are older than the window (a run's mail can wait long).
    earlier = await _by_id(s, claim.thread_id, triggers - {m.id for m in newest}, handles)
    if size is None:  # nothing in view: count apart
        counted = await fast.execute(s, _COUNT, {"thread_id": claim.thread_id, "upto": cap + 1})
        size = int(counted[0][0] or 0)
    return _Window(newest, earlier + [m for m in newest if m.id in triggers], size, size > cap)


async def _by_id(
    s: AsyncSession | fast.Reader, thread_id: str, ids: frozenset[str], handles: dict[str, str]
) -> list[HistoryMessage]:
    if not ids:
        return []
    rows = await fast.execute(s, _BY_ID, {"thread_id": thread_id, "ids": sorted(ids)})
    return await _messages(s, rows, handles)


async def _messages(
    s: AsyncSession | fast.Reader, rows: Iterable[Any], handles: dict[str, str]
) -> list[HistoryMessage]:
    """Rows as history messages; senders no longer in the thread are looked up (into ``handles``)."""
    batch = list(rows)
    missing = {r.sender_id for r in batch if r.sender_id and r.sender_id not in handles}
    if missing:
        for actor in await fast.execute(s, _HANDLES, {"ids": sorted(missing)}):
            handles[actor.id] = actor.handle
    return [
        HistoryMessage(
            id=r.id,
            sender=handles.get(r.sender_id) if r.sender_id else None,
            sender_name=f"@{handles.get(r.sender_id, 'unknown')}" if r.sender_id else "system",
            content=r.content,
            mentions=tuple(r.mentions or ()),
        )
        for r in batch
    ]
