"""What an actor token may see: the threads its actor takes part in (API.md, actor tokens).

Outside them a token gets 404, as if the thread did not exist: a thread's existence is as private
as its messages. The admin is never scoped. Lists are filtered in SQL (``member_threads``); single
resources are checked with :meth:`Scope.require_thread` / :meth:`Scope.require_run`; an event stream
keeps a :class:`StreamScope`, the set of its threads, updated in memory from the rows it filters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import NotFound
from openbot.runtime.views import ThreadView
from openbot.store.db import Database
from openbot.store.models import Actor, Run, Thread, ThreadParticipant


def member_threads(handle: str) -> Select[str]:
    """The ids of the threads ``handle`` takes part in, as a subquery."""
    return (
        select(ThreadParticipant.thread_id)
        .join(Actor, Actor.id == ThreadParticipant.actor_id)
        .where(Actor.handle == handle, Actor.deleted.is_(False))
    )


async def is_member(session: AsyncSession, handle: str, thread_id: str) -> bool:
    found = await session.scalar(member_threads(handle).where(ThreadParticipant.thread_id == thread_id))
    return found is not None


@dataclass
class StreamScope:
    """An actor's threads, for one event stream. Rows of other threads are dropped, and so are rows
    of no thread except the bots' (``bot.updated``: any token lists the bots) and the actor's own
    automations'. A row that shows the actor joining a thread (it got mail there, was mentioned,
    posted, or is listed as a participant) adds the thread first, so the stream follows it from
    that row on."""

    handle: str
    threads: set[str] = field(default_factory=set)

    def allows(self, type_: str, thread_id: str | None, data: Mapping[str, Any] | None) -> bool:
        if thread_id is None:  # the team's bots (any token lists them), and its own automations
            owner = data.get("owner") if data is not None else None
            return type_ == "bot.updated" or (type_ == "automation.updated" and owner == self.handle)
        if thread_id in self.threads:
            return True
        if data is not None and self._joins(type_, data):
            self.threads.add(thread_id)
            return True
        return False

    def _joins(self, type_: str, data: Mapping[str, Any]) -> bool:
        if type_ == "inbox.updated":
            return bool(data.get("actor") == self.handle)
        if type_ == "message.created":
            sender = data.get("sender") or {}
            return sender.get("handle") == self.handle or self.handle in (data.get("mentions") or ())
        if type_ == "thread.updated":
            return any(p.get("handle") == self.handle for p in data.get("participants") or ())
        return False


@dataclass(frozen=True)
class Scope:
    db: Database

    async def require_thread(self, handle: str, thread_id: str) -> None:
        """404 unless ``handle`` takes part in the thread (the same answer as a thread that is gone)."""
        async with self.db.read() as s:
            if not await is_member(s, handle, thread_id):
                raise NotFound(f"thread {thread_id} not found", {"thread_id": thread_id})

    async def require_run(self, handle: str, run_id: str) -> None:
        """404 unless the run belongs to one of ``handle``'s threads."""
        async with self.db.read() as s:
            found = await s.scalar(
                select(Run.id).where(Run.id == run_id, Run.thread_id.in_(member_threads(handle)))
            )
        if found is None:
            raise NotFound(f"run {run_id} not found", {"run_id": run_id})

    async def list_threads(self, handle: str, *, q: str | None, limit: int) -> list[ThreadView]:
        """``handle``'s threads, most recently active first, with its unread counts."""
        # Here, not at the top: threads → governor.disposals → scope would be a cycle.
        from openbot.runtime import threads

        async with self.db.read() as s:
            stmt = select(Thread).where(Thread.id.in_(member_threads(handle)))
            if q:
                stmt = stmt.where(Thread.title.icontains(q, autoescape=True))  # % and _ are literal
            newest = (Thread.last_message_at.desc().nulls_last(), Thread.created_at.desc(), Thread.id.desc())
            rows = list(await s.scalars(stmt.order_by(*newest).limit(limit)))
            return await threads.views(s, rows, actor=await threads.find_actor(s, handle))

    async def stream(self, handle: str) -> StreamScope:
        async with self.db.read() as s:
            ids: Iterable[str] = await s.scalars(member_threads(handle))
            return StreamScope(handle, set(ids))
