"""Memories and run contexts as the API uses them (``/bots/{handle}/memories``, ``/runs/{id}/context``).

An unknown bot is bad input here (422, the memory API's contract), an unknown memory or run is
404. Every change is one transaction through :mod:`openbot.runtime.memory.store`, so a refused
request writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, NotRequired

from pydantic import Field
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from typing_extensions import TypedDict

from openbot.config import Settings
from openbot.core import memory as rules
from openbot.core.errors import InvalidArgument, NotFound
from openbot.runtime.commands import Body
from openbot.runtime.memory import embeddings, store
from openbot.runtime.memory.context import ContextView, context_view
from openbot.runtime.memory.store import BotRef, Origin
from openbot.runtime.views import iso
from openbot.store.db import Database
from openbot.store.models import Actor, Memory, PreparedContext, Run


class MemoryCreate(Body):
    content: str = Field(max_length=rules.MAX_CONTENT)
    segment: str = rules.DEFAULT_SEGMENT
    tier: str = rules.DEFAULT_TIER
    importance: float = rules.DEFAULT_IMPORTANCE
    created_at: str | None = None  # ISO 8601, for imports
    last_accessed_at: str | None = None


class MemoryUpdate(Body):
    content: str | None = Field(None, max_length=rules.MAX_CONTENT)
    segment: str | None = None
    tier: str | None = None
    importance: float | None = None
    lifecycle: Literal["active", "archived"] | None = None


class MemoryView(TypedDict):
    id: str
    bot: str
    content: str
    segment: str
    tier: str
    importance: float
    access_count: int
    last_accessed_at: str | None
    lifecycle: str
    supersedes: str | None
    source: str
    score: float | None
    created_at: str | None
    updated_at: str | None


class MemoryIndexStatus(TypedDict):
    index: str
    model: NotRequired[str]
    embeddings: NotRequired[str]


def index_status(settings: Settings) -> MemoryIndexStatus:
    """Which relevance index is active: embeddings (with their model) when ``OPENBOT_EMBEDDINGS``
    is set — a spec that cannot be used stops the start instead of falling back — else lexical."""
    if settings.embeddings:
        return {"index": "embeddings", "model": settings.embeddings}
    return {"index": "lexical"}


def memory_view(memory: Memory, handle: str, score: float | None = None) -> MemoryView:
    return {
        "id": memory.id,
        "bot": handle,
        "content": memory.content,
        "segment": memory.segment,
        "tier": memory.tier,
        "importance": memory.importance,
        "access_count": memory.access_count,
        "last_accessed_at": iso(memory.last_accessed_at),
        "lifecycle": memory.lifecycle,
        "supersedes": memory.supersedes,
        "source": memory.source,
        "score": score,
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
    }


@dataclass(frozen=True)
class MemoryQuery:
    q: str | None = None
    segment: str | None = None
    tier: str | None = None
    lifecycle: str = "active"  # active | archived | all
    limit: int = 100


@dataclass(frozen=True)
class MemoryService:
    db: Database

    async def list_memories(self, handle: str, query: MemoryQuery) -> list[MemoryView]:
        lifecycle = None if query.lifecycle == "all" else query.lifecycle
        searched = query.q if query.q and query.q.strip() else None
        vectors = await embeddings.ahead(self.db, queries=[searched] if searched else [])
        async with self.db.read() as s:
            embeddings.use(s, vectors)
            bot = await _bot(s, handle)
            if query.q and query.q.strip():
                found = await store.search(
                    s,
                    bot.id,
                    query.q,
                    limit=query.limit,
                    segment=query.segment,
                    tier=query.tier,
                    lifecycle=lifecycle,
                )
                return [memory_view(m, bot.handle, score) for m, score in found]
            rows = await store.listing(
                s, bot.id, limit=query.limit, segment=query.segment, tier=query.tier, lifecycle=lifecycle
            )
        return [memory_view(m, bot.handle) for m in rows]

    async def create(self, handle: str, body: MemoryCreate) -> MemoryView:
        created_at = _timestamp("created_at", body.created_at)
        accessed = _timestamp("last_accessed_at", body.last_accessed_at)
        vectors = await embeddings.ahead(self.db, [body.content])
        async with self.db.transaction() as s:
            embeddings.use(s, vectors)
            bot = await _bot(s, handle)
            memory = await store.create(
                s,
                bot,
                body.content,
                segment=body.segment,
                tier=body.tier,
                importance=body.importance,
                origin=Origin(source="human"),
                created_at=created_at,
                last_accessed_at=accessed,
            )
        return memory_view(memory, bot.handle)

    async def update(self, handle: str, memory_id: str, body: MemoryUpdate) -> MemoryView:
        for field in body.model_fields_set:  # partial: a field given as null is not "unchanged"
            if getattr(body, field) is None:
                raise InvalidArgument(f"{field} cannot be null", {"field": field})
        vectors = await embeddings.ahead(self.db, [body.content])
        async with self.db.transaction() as s:
            embeddings.use(s, vectors)  # the provider is not asked while the memory is locked
            bot = await _bot(s, handle)
            memory = await _memory(s, bot, memory_id)
            await store.update(
                s,
                bot,
                memory,
                content=body.content,
                segment=body.segment,
                tier=body.tier,
                importance=body.importance,
                lifecycle=body.lifecycle,
            )
        return memory_view(memory, bot.handle)

    async def delete(self, handle: str, memory_id: str) -> None:
        async with self.db.transaction() as s:
            bot = await _bot(s, handle)
            await store.delete(s, bot, await _memory(s, bot, memory_id))

    async def run_context(
        self, run_id: str, in_flight: Mapping[str, PreparedContext] | None = None
    ) -> ContextView:
        """The run's recorded context; while it runs in this process (``in_flight``: the runner's),
        the one its outcome will record."""
        # In flight first: a run whose outcome commits while the table is read is gone from it.
        context = in_flight.get(run_id) if in_flight is not None else None
        async with self.db.read() as s:
            if context is None:
                context = await s.get(PreparedContext, run_id)
            if context is None:
                run = await s.get(Run, run_id)
                detail = "" if run is None else f" (status {run.status}: a run has one once it is prepared)"
                raise NotFound(f"no context recorded for run {run_id}{detail}", {"run_id": run_id})
        return context_view(context)


async def _bot(s: AsyncSession, handle: str) -> BotRef:
    row = (
        await s.execute(
            select(Actor.id, Actor.handle).where(
                Actor.handle == handle, Actor.kind == "bot", Actor.deleted.is_(False)
            )
        )
    ).one_or_none()
    if row is None:
        raise InvalidArgument(f"no bot @{handle}", {"field": "bot", "value": handle})
    return BotRef(row.id, row.handle)


async def _memory(s: AsyncSession, bot: BotRef, memory_id: str) -> Memory:
    memory = await store.get(s, bot.id, memory_id, for_update=True)  # for an edit or a deletion
    if memory is None:
        raise NotFound(f"@{bot.handle} has no memory {memory_id}", {"memory_id": memory_id})
    return memory


def _timestamp(field: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidArgument(f"{field} must be an ISO 8601 time", {"field": field, "value": value}) from None
    return stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)
