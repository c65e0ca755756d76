"""Bots' memories, what a run's first model call saw, and pending reflections."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from openbot.store.models.base import Base


class Memory(Base):
    """One durable memory of one bot (DESIGN §8). Bot-scoped: ``thread_id`` is null for bot-level
    knowledge; a memory confined to one thread is never injected (invariant 10).

    The lexical index lives beside the row and is kept by the database, not by Python: on SQLite
    the FTS5 table ``memories_fts`` (external content, synced by triggers, migration 0006); on
    PostgreSQL a generated ``search`` tsvector column with a GIN index. Neither is mapped here.
    """

    __tablename__ = "memories"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    content: Mapped[str] = mapped_column(Text)
    segment: Mapped[str] = mapped_column(String(16), default="knowledge")
    tier: Mapped[str] = mapped_column(String(16), default="long")
    importance: Mapped[float] = mapped_column(Float, default=0.5)
    access_count: Mapped[int] = mapped_column(Integer, default=0)
    last_accessed_at: Mapped[datetime]
    lifecycle: Mapped[str] = mapped_column(String(16), default="active")
    supersedes: Mapped[str | None] = mapped_column(String(40))  # the memory this one replaced
    source: Mapped[str] = mapped_column(String(16), default="human")
    thread_id: Mapped[str | None] = mapped_column(String(40))  # scope: null = bot-level knowledge
    origin_thread_id: Mapped[str | None] = mapped_column(String(40))  # where it was learned
    origin_run_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        CheckConstraint(
            "segment in ('identity', 'preference', 'correction', 'relationship', 'project', "
            "'knowledge', 'context')",
            name="ck_memory_segment",
        ),
        CheckConstraint("tier in ('short', 'long', 'permanent')", name="ck_memory_tier"),
        CheckConstraint("lifecycle in ('active', 'archived')", name="ck_memory_lifecycle"),
        CheckConstraint(
            "source in ('tool', 'reflection', 'human', 'consolidation')", name="ck_memory_source"
        ),
        CheckConstraint("importance >= 0 AND importance <= 1", name="ck_memory_importance"),
        Index("ix_memories_bot", "bot_id", "lifecycle", "id"),
        Index("ix_memories_bot_created", "bot_id", "lifecycle", "created_at", "id"),  # the listing
    )


class PreparedContext(Base):
    """What a run's first model call saw (``GET /runs/{id}/context``), recorded at prepare time."""

    __tablename__ = "run_contexts"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    system: Mapped[str] = mapped_column(Text)
    messages: Mapped[list[Any]] = mapped_column(default=list)
    memories: Mapped[list[Any]] = mapped_column(default=list)
    scoped: Mapped[bool] = mapped_column(Boolean, default=False)
    omitted: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]


class PendingReflection(Base):
    """A reflection owed for a (bot, thread): written in the finish transaction of each completed run
    (one upsert that moves ``last_run_at`` on: the debounce), deleted when the reflection is done.
    It is the durable half of the timer, so a crash or restart loses nothing (invariant 12)."""

    __tablename__ = "pending_reflections"

    bot_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True)
    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"), primary_key=True)
    from_message_id: Mapped[str | None] = mapped_column(String(40))  # the oldest trigger not reflected on
    runs: Mapped[int] = mapped_column(Integer, default=1)
    last_run_at: Mapped[datetime]  # due once MEMORY_REFLECTION_DELAY has passed since
    lease_until: Mapped[datetime | None]  # a process is reflecting on it until then
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_pending_reflections_last_run", "last_run_at"),)


class MemoryVector(Base):
    """A memory's embedding under one model (``OPENBOT_EMBEDDINGS``), unit length; written with the
    memory's content, so relevance by embeddings never skips a memory (migration 0015)."""

    __tablename__ = "memory_vectors"

    memory_id: Mapped[str] = mapped_column(ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    model: Mapped[str] = mapped_column(String(200))
    vector: Mapped[list[Any]] = mapped_column()

    __table_args__ = (Index("ix_memory_vectors_bot", "bot_id", "model"),)
