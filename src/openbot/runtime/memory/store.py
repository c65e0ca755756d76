"""Bots' memories: every write path goes through here (DESIGN §8).

The tools, the API, reflection and consolidation create, update, archive and delete memories with
these functions, inside the caller's transaction; each writes its ``memory.*`` activity row in
that same transaction, so the Activity view shows every change and nothing half-done. Fields are
checked here (``core.memory``), once for every caller: bad input raises ``InvalidArgument`` before
anything is written.

Relevance comes from the database's lexical index (``Dialect.memory_index``); :func:`relevant` is
the hot-path read (one statement, built once) and :func:`touch` the batched access bump.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy import update as sql_update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core import memory as rules
from openbot.core.ids import new_id
from openbot.runtime.memory import embeddings
from openbot.store import fast
from openbot.store.db import database_of, dialect, now
from openbot.store.journal import log_activity
from openbot.store.memory_index import LexicalIndex
from openbot.store.models import Memory, MemoryVector


@dataclass(frozen=True)
class BotRef:
    """The bot a memory belongs to (its handle labels the activity rows)."""

    id: str
    handle: str


@dataclass(frozen=True)
class Hit:
    """A memory that matched a text, with its relevance score (higher is more relevant)."""

    id: str
    content: str
    score: float


@dataclass(frozen=True)
class Origin:
    """Where a memory was written from (provenance only: memories are bot-scoped)."""

    source: str = "human"
    thread_id: str | None = None
    run_id: str | None = None


async def create(
    session: AsyncSession,
    bot: BotRef,
    content: str,
    *,
    segment: str = rules.DEFAULT_SEGMENT,
    tier: str = rules.DEFAULT_TIER,
    importance: float = rules.DEFAULT_IMPORTANCE,
    origin: Origin = Origin(),
    supersedes: str | None = None,
    created_at: datetime | None = None,
    last_accessed_at: datetime | None = None,
    reason: str | None = None,
) -> Memory:
    """A new active memory (``created_at``/``last_accessed_at`` are for imports)."""
    stamp = now(session)
    memory = Memory(
        id=new_id("mem"),
        bot_id=bot.id,
        content=rules.check_content(content),
        segment=rules.check_choice("segment", segment, rules.SEGMENTS),
        tier=rules.check_choice("tier", tier, rules.TIERS),
        importance=rules.check_importance(importance),
        access_count=0,
        lifecycle="active",
        supersedes=supersedes,
        source=rules.check_choice("source", origin.source, rules.SOURCES),
        origin_thread_id=origin.thread_id,
        origin_run_id=origin.run_id,
        created_at=created_at or stamp,
        last_accessed_at=last_accessed_at or created_at or stamp,
        updated_at=stamp,
    )
    session.add(memory)
    await embeddings.remember_vector(session, memory)
    _log(
        session,
        "memory.created",
        f"@{bot.handle} remembered: {_short(memory.content)}",
        bot,
        memory,
        origin,
        reason=reason,
    )
    return memory


async def get(
    session: AsyncSession, bot_id: str, memory_id: str, *, for_update: bool = False
) -> Memory | None:
    """The bot's memory with this id (another bot's memory is not found); ``for_update``: locked
    (PostgreSQL), so an edit and a deletion racing each other take turns."""
    memory = await session.get(Memory, memory_id, with_for_update=for_update or None)
    return memory if memory is not None and memory.bot_id == bot_id else None


async def update(
    session: AsyncSession,
    bot: BotRef,
    memory: Memory,
    *,
    content: str | None = None,
    segment: str | None = None,
    tier: str | None = None,
    importance: float | None = None,
    lifecycle: str | None = None,
    origin: Origin = Origin(),
    reason: str | None = None,
) -> Memory:
    """Change the given fields (all checked before any is set)."""
    changes: dict[str, Any] = {}
    if content is not None:
        changes["content"] = rules.check_content(content)
    if segment is not None:
        changes["segment"] = rules.check_choice("segment", segment, rules.SEGMENTS)
    if tier is not None:
        changes["tier"] = rules.check_choice("tier", tier, rules.TIERS)
    if importance is not None:
        changes["importance"] = rules.check_importance(importance)
    if lifecycle is not None:
        changes["lifecycle"] = rules.check_choice("lifecycle", lifecycle, rules.LIFECYCLES)
    stamp = now(session)
    if changes.get("lifecycle") == "active" and memory.lifecycle != "active":
        # Restored: its decay starts again from now, or the next pass would archive it again.
        memory.last_accessed_at = stamp
    for key, value in changes.items():
        setattr(memory, key, value)
    memory.updated_at = stamp
    if "content" in changes:
        await embeddings.remember_vector(session, memory)
    _log(
        session,
        "memory.updated",
        f"@{bot.handle} updated a memory: {_short(memory.content)}",
        bot,
        memory,
        origin,
        reason=reason,
        changed=sorted(changes),
    )
    return memory


async def archive(
    session: AsyncSession,
    bot: BotRef,
    memory: Memory,
    *,
    origin: Origin = Origin(),
    reason: str | None = None,
) -> Memory:
    """Keep the memory but stop using it (never injected, not searched by default)."""
    memory.lifecycle = "archived"
    memory.updated_at = now(session)
    _log(
        session,
        "memory.archived",
        f"@{bot.handle} archived a memory: {_short(memory.content)}",
        bot,
        memory,
        origin,
        reason=reason,
    )
    return memory


async def delete(
    session: AsyncSession,
    bot: BotRef,
    memory: Memory,
    *,
    origin: Origin = Origin(),
    reason: str | None = None,
    event: str = "memory.deleted",
) -> None:
    """Delete the memory (``event="memory.pruned"`` when decay removes it)."""
    await session.delete(memory)
    verb = "pruned" if event == "memory.pruned" else "forgot"
    _log(
        session,
        event,
        f"@{bot.handle} {verb} a memory: {_short(memory.content)}",
        bot,
        memory,
        origin,
        reason=reason,
    )


async def search(
    session: AsyncSession,
    bot_id: str,
    text: str,
    *,
    limit: int = rules.INJECTED,
    segment: str | None = None,
    tier: str | None = None,
    lifecycle: str | None = "active",
) -> list[tuple[Memory, float]]:
    """The bot's memories most relevant to ``text``, best first (``lifecycle=None``: any)."""
    active = embeddings.embeddings_of(session)
    if active is not None:
        stmt = _filtered(_WITH_VECTORS, segment=segment, tier=tier, lifecycle=lifecycle)
        return await embeddings.ranked(session, active, stmt, bot_id, text, limit)
    index = dialect(session).memory_index
    terms = rules.query_terms(text)
    if not terms:
        return []
    stmt = _filtered(index.ranked(Memory), segment=segment, tier=tier, lifecycle=lifecycle)
    rows = await session.execute(stmt, {"bot_id": bot_id, "query": index.query(terms), "limit": limit})
    return [(memory, float(score)) for memory, score in rows]


async def listing(
    session: AsyncSession,
    bot_id: str,
    *,
    limit: int = 100,
    segment: str | None = None,
    tier: str | None = None,
    lifecycle: str | None = "active",
) -> list[Memory]:
    """The bot's memories, newest first."""
    newest = (Memory.created_at.desc(), Memory.id.desc())  # an import's created_at counts
    stmt = select(Memory).where(Memory.bot_id == bot_id).order_by(*newest).limit(limit)
    return list(await session.scalars(_filtered(stmt, segment=segment, tier=tier, lifecycle=lifecycle)))


def _filtered(
    stmt: Select[Any], *, segment: str | None, tier: str | None, lifecycle: str | None
) -> Select[Any]:
    if segment is not None:
        stmt = stmt.where(Memory.segment == rules.check_choice("segment", segment, rules.SEGMENTS))
    if tier is not None:
        stmt = stmt.where(Memory.tier == rules.check_choice("tier", tier, rules.TIERS))
    if lifecycle is not None:
        stmt = stmt.where(Memory.lifecycle == rules.check_choice("lifecycle", lifecycle, rules.LIFECYCLES))
    return stmt


# Memories with their vectors (embeddings on), for search's filters.
_WITH_VECTORS = (
    select(Memory, MemoryVector.vector)
    .join(MemoryVector, MemoryVector.memory_id == Memory.id)
    .where(Memory.bot_id == bindparam("bot_id"), MemoryVector.model == bindparam("model"))
)

# The hot path: injection at prepare time reads with one statement per index, built once.
_RELEVANT: dict[int, fast.Sql] = {}


def _relevant_statement(index: LexicalIndex) -> fast.Sql:
    stmt = _RELEVANT.get(id(index))
    if stmt is None:
        stmt = _RELEVANT[id(index)] = fast.Sql(
            index.ranked(Memory.id, Memory.content).where(
                Memory.lifecycle == "active", Memory.thread_id.is_(None)
            )
        )
    return stmt


async def relevant(
    session: AsyncSession | fast.Reader, bot_id: str, text: str, limit: int = rules.INJECTED
) -> list[Hit]:
    """The bot's active, bot-level memories most relevant to ``text`` (none when nothing matches)."""
    database = session.database if isinstance(session, fast.Reader) else database_of(session)
    active = database.embeddings
    if active is not None:  # ranked in Python over the bot's vectors: a session of its own
        async with database.read() as s:
            return [Hit(*hit) for hit in await embeddings.nearest(s, active, bot_id, text, limit)]
    terms = rules.query_terms(text)
    if not terms:
        return []
    index = database.dialect.memory_index
    params = {"bot_id": bot_id, "query": index.query(terms), "limit": limit}
    rows = await fast.execute(session, _relevant_statement(index), params)
    return [Hit(id_, content, float(score)) for id_, content, score in rows]


_TOUCH = fast.Sql(
    sql_update(Memory)
    .where(Memory.id.in_(bindparam("ids", expanding=True)))
    .values(
        access_count=Memory.access_count + 1,
        last_accessed_at=bindparam("stamp", type_=Memory.updated_at.type),
    )
)


async def touch(session: AsyncSession, memory_ids: Sequence[str]) -> None:
    """Count one use of each memory (injected or found), in one statement."""
    if memory_ids:
        await fast.execute(session, _TOUCH, {"ids": list(memory_ids), "stamp": now(session)})


def _log(
    session: AsyncSession,
    event: str,
    summary: str,
    bot: BotRef,
    memory: Memory,
    origin: Origin,
    *,
    reason: str | None,
    changed: list[str] | None = None,
) -> None:
    detail: dict[str, Any] = {
        "memory_id": memory.id,
        "content": memory.content,
        "segment": memory.segment,
        "tier": memory.tier,
        "source": origin.source,
    }
    if reason:
        detail["reason"] = reason
    if changed is not None:
        detail["changed"] = changed
    log_activity(
        session,
        event,
        summary,
        actor_id=bot.id,
        actor_handle=bot.handle,
        thread_id=origin.thread_id,
        run_id=origin.run_id,
        detail=detail,
    )


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
