"""Threads: create, read, delete, and the reads the API and UI need."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import InvalidArgument, NotFound
from openbot.core.ids import new_id
from openbot.core.scheduling import ItemKind
from openbot.core.states import ItemStatus
from openbot.runtime.commands import ThreadCreate
from openbot.runtime.governor.disposals import Reason, dispose_queued
from openbot.runtime.team import ACTOR_ROW, get_actor
from openbot.runtime.views import MessageView, ThreadView, message_view, thread_view
from openbot.store import fast, inserts
from openbot.store.db import now
from openbot.store.journal import append_event, log_activity
from openbot.store.models import Actor, InboxItem, Message, Run, Thread, ThreadParticipant


async def get_thread(session: AsyncSession, thread_id: str, *, for_update: bool = False) -> Thread:
    thread = await session.get(Thread, thread_id, with_for_update=for_update or None)
    if thread is None:
        raise NotFound(f"thread {thread_id} not found", {"thread_id": thread_id})
    return thread


_THREAD_ROW = fast.Sql(select(*inserts.table_of(Thread).columns).where(Thread.id == bindparam("thread_id")))


async def thread_and_actor(session: AsyncSession, thread_id: str, handle: str) -> tuple[Thread, Actor | None]:
    """The thread as a read-only record with its attributes (posting needs no more;
    ``Delivery.post`` reads the row again, locked), and the live actor called ``handle`` (None if
    there is none), read together (one round trip on PostgreSQL): what a post starts from."""
    found, actors = await fast.execute_all(
        session, [(_THREAD_ROW, {"thread_id": thread_id}), (ACTOR_ROW, {"handle": handle})]
    )
    if not found:
        raise NotFound(f"thread {thread_id} not found", {"thread_id": thread_id})
    return cast(Thread, found[0]), cast(Actor, actors[0]) if actors else None


async def participants(session: AsyncSession, thread_id: str) -> list[Actor]:
    return list(
        await session.scalars(
            select(Actor)
            .join(ThreadParticipant, ThreadParticipant.actor_id == Actor.id)
            .where(ThreadParticipant.thread_id == thread_id)
            .order_by(ThreadParticipant.joined_at, Actor.handle)
        )
    )


async def view(session: AsyncSession, thread: Thread, *, actor: Actor | None = None) -> ThreadView:
    return (await views(session, [thread], actor=actor))[0]


async def views(session: AsyncSession, rows: list[Thread], *, actor: Actor | None = None) -> list[ThreadView]:
    """Thread views for many threads in three queries (participants, default bots, unread counts)."""
    ids = [t.id for t in rows]
    members: dict[str, list[Actor]] = {i: [] for i in ids}
    for thread_id, member in await session.execute(
        select(ThreadParticipant.thread_id, Actor)
        .join(Actor, Actor.id == ThreadParticipant.actor_id)
        .where(ThreadParticipant.thread_id.in_(ids))
        .order_by(ThreadParticipant.joined_at, Actor.handle)
    ):
        members[thread_id].append(member)
    defaults = {t.default_bot_id for t in rows if t.default_bot_id}
    bots = (
        {a.id: a for a in await session.scalars(select(Actor).where(Actor.id.in_(defaults)))}
        if defaults
        else {}
    )
    counts: dict[tuple[str, str], int] = {}
    if actor is not None:
        for thread_id, kind, count in await session.execute(
            select(InboxItem.thread_id, InboxItem.kind, func.count())
            .where(
                InboxItem.actor_id == actor.id,
                InboxItem.thread_id.in_(ids),
                InboxItem.status == ItemStatus.QUEUED,
            )
            .group_by(InboxItem.thread_id, InboxItem.kind)
        ):
            counts[(thread_id, kind)] = int(count)
    out = []
    for thread in rows:
        item = thread_view(thread, members[thread.id], bots.get(thread.default_bot_id or ""))
        if actor is not None:
            item["unread"] = counts.get((thread.id, ItemKind.MESSAGE), 0)
            item["needs_action"] = counts.get((thread.id, ItemKind.QUESTION), 0)
        out.append(item)
    return out


async def create_thread(session: AsyncSession, command: ThreadCreate) -> Thread:
    members = [await _actor(session, h, "participants") for h in dict.fromkeys(command.participants)]
    default = None
    if command.default_bot is not None:
        default = await _actor(session, command.default_bot, "default_bot")
        if default.kind != "bot":
            raise InvalidArgument(f"@{default.handle} is not a bot", {"field": "default_bot"})
    you = await session.scalar(select(Actor).where(Actor.handle == "you", Actor.deleted.is_(False)))
    if you is not None and you not in members:
        members.insert(0, you)  # the operator is in every thread they can see
    if default is not None and default not in members:
        members.append(default)
    stamp = now(session)
    thread = Thread(
        id=new_id("thr"),
        title=command.title or "",
        kind=command.kind,
        default_bot_id=default.id if default else None,
        working_directory=command.working_directory,
        require_mention=command.require_mention,
        hop_limit_notified=False,
        created_at=stamp,
        last_message_at=None,
    )
    session.add(thread)
    await session.flush()
    for member in members:
        session.add(ThreadParticipant(thread_id=thread.id, actor_id=member.id, joined_at=stamp))
    await session.flush()
    append_event(session, "thread.updated", dict(await view(session, thread)), thread.id)
    log_activity(
        session, "thread.created", f"thread {thread.title or thread.id} created", thread_id=thread.id
    )
    return thread


async def update_thread(session: AsyncSession, thread_id: str, changes: dict[str, Any]) -> Thread:
    """PATCH: ``title``, ``default_bot`` (null clears it; the bot joins the thread),
    ``require_mention`` and ``working_directory`` (checked and normalised by the caller; null or ""
    clears it)."""
    thread = await get_thread(session, thread_id, for_update=True)  # a racing delete: 404, not a 500
    if "title" in changes:
        if changes["title"] is None:
            raise InvalidArgument("title cannot be null", {"field": "title"})
        thread.title = changes["title"]
    if "default_bot" in changes:
        thread.default_bot_id = None
        if changes["default_bot"] is not None:
            bot = await _actor(session, changes["default_bot"], "default_bot")
            if bot.kind != "bot":
                raise InvalidArgument(f"@{bot.handle} is not a bot", {"field": "default_bot"})
            thread.default_bot_id = bot.id
            if bot.id not in {a.id for a in await participants(session, thread.id)}:
                session.add(ThreadParticipant(thread_id=thread.id, actor_id=bot.id, joined_at=now(session)))
    if "working_directory" in changes:
        thread.working_directory = changes["working_directory"] or None
    if "require_mention" in changes:
        if changes["require_mention"] is None:
            raise InvalidArgument("require_mention cannot be null", {"field": "require_mention"})
        thread.require_mention = changes["require_mention"]
    await session.flush()
    append_event(session, "thread.updated", dict(await view(session, thread)), thread.id)
    log_activity(
        session,
        "thread.updated",
        f"thread {thread.title or thread.id} updated",
        thread_id=thread.id,
        detail={"fields": sorted(changes)},
    )
    return thread


async def _actor(session: AsyncSession, handle: str, field: str) -> Actor:
    try:
        return await get_actor(session, handle)
    except NotFound as exc:
        raise InvalidArgument(
            f"unknown handle @{handle} in {field}", {"field": field, "handle": handle}
        ) from exc


async def delete_thread(session: AsyncSession, thread_id: str) -> None:
    # Its runs first, then the thread, both locked (PostgreSQL): the order a finish, a cancel or a
    # resume takes them in (run, then thread), so a delete racing one waits instead of deadlocking,
    # and of two deletes racing the second finds the thread gone (404).
    await session.execute(select(Run.id).where(Run.thread_id == thread_id).order_by(Run.id).with_for_update())
    thread = await session.scalar(
        select(Thread)
        .where(Thread.id == thread_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if thread is None:
        raise NotFound(f"thread {thread_id} not found", {"thread_id": thread_id})
    await dispose_queued(session, Reason.THREAD_DELETED, thread_id=thread_id)  # invariant 13
    await session.delete(thread)
    append_event(session, "thread.updated", {"id": thread_id, "deleted": True}, thread_id)
    log_activity(
        session, "thread.deleted", f"thread {thread.title or thread_id} deleted", thread_id=thread_id
    )


async def list_messages(
    session: AsyncSession,
    thread_id: str,
    *,
    after: str | None,
    limit: int,
    before: str | None = None,
    latest: bool = False,
) -> list[MessageView]:
    """Messages oldest first: after ``after``; or the ``limit`` newest (before ``before``, if given)."""
    await get_thread(session, thread_id)
    stmt = (
        select(Message, Actor)
        .outerjoin(Actor, Actor.id == Message.sender_id)
        .where(Message.thread_id == thread_id)
    )
    if after:
        stmt = stmt.where(Message.id > after)
    if before:
        stmt = stmt.where(Message.id < before)
    if before or latest:
        rows = list(reversed((await session.execute(stmt.order_by(Message.id.desc()).limit(limit))).all()))
    else:
        rows = list((await session.execute(stmt.order_by(Message.id).limit(limit))).all())
    return [message_view(m, a) for m, a in rows]


async def list_threads(
    session: AsyncSession, *, q: str | None, limit: int, actor: Actor | None
) -> list[ThreadView]:
    """Threads, most recently active first (title search with ``q``). A thread is active when it is
    created and when a message is posted: a new empty thread comes first, as the web UI sorts them,
    and is never cut off the end of the list by older ones."""
    stmt = select(Thread)
    if q:
        stmt = stmt.where(Thread.title.icontains(q, autoescape=True))  # % and _ are literal
    active = func.coalesce(Thread.last_message_at, Thread.created_at)
    # At one instant a post is newer than a creation (the post was made second, or in it).
    newest = (active.desc(), Thread.last_message_at.desc().nulls_last(), Thread.id.desc())
    stmt = stmt.order_by(*newest).limit(limit)
    return await views(session, list(await session.scalars(stmt)), actor=actor)


async def find_actor(session: AsyncSession, handle: str) -> Actor | None:
    return await session.scalar(select(Actor).where(Actor.handle == handle, Actor.deleted.is_(False)))
