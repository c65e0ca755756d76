"""Mail and runs: inbox items, runs and their events, held hand-offs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from openbot.store.models.base import Base


class InboxItem(Base):
    __tablename__ = "inbox_items"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    actor_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"), nullable=False)
    kind: Mapped[str] = mapped_column(String(16))  # message | question | resume
    message_id: Mapped[str | None] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"))
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(
        String(16), default="queued"
    )  # queued|processing|done|cancelled|failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    claimed_by_run: Mapped[str | None] = mapped_column(String(40))  # the run that took this item
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        CheckConstraint("kind in ('message', 'question', 'resume')", name="ck_item_kind"),
        CheckConstraint(
            "(kind = 'message' AND message_id IS NOT NULL AND run_id IS NULL) OR "
            "(kind <> 'message' AND run_id IS NOT NULL AND message_id IS NULL)",
            name="ck_item_points_at_one_thing",
        ),
        Index("ix_inbox_actor_status", "actor_id", "status", "id"),
        Index("ix_inbox_thread", "thread_id", "actor_id", "status"),
    )


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16))
    trigger_message_ids: Mapped[list[str]] = mapped_column(default=list)
    interrupt: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    hop: Mapped[int] = mapped_column(Integer, default=0)  # max hop of the triggers
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    model_calls: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_token: Mapped[int] = mapped_column(Integer, default=0)
    lease_expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]

    __table_args__ = (
        CheckConstraint(
            "status in ('queued', 'running', 'waiting_human', 'completed', 'failed', 'cancelled')",
            name="ck_run_status",
        ),
        # Invariant 3, second half, enforced by the database across processes: never two runs of
        # one bot in flight in one thread.
        Index(
            "uq_runs_one_active_per_bot_thread",
            "bot_id",
            "thread_id",
            unique=True,
            sqlite_where=text("status in ('queued', 'running', 'waiting_human')"),
            postgresql_where=text("status in ('queued', 'running', 'waiting_human')"),
        ),
        Index("ix_runs_thread", "thread_id", "id"),
        Index("ix_runs_status", "status"),
    )


class RunEvent(Base):
    __tablename__ = "run_events"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    type: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]


class HeldHandoff(Base):
    """A hand-off held because its sender still had mail in the thread (invariant 8)."""

    __tablename__ = "held_handoffs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    sender_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    target_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending|released|superseded
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_held_sender", "thread_id", "sender_id", "status"),)
