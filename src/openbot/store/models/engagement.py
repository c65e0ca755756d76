"""Engagement: who saw each message (dispositions) and admitted triggers that were dropped (disposals)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from openbot.store.models.base import Base


class Disposition(Base):
    """What one bot decided to do with one message: engage, observe or ignore, the tier and signal
    that decided it and why (DESIGN §7, invariant 13). Written with the message, one row per bot
    that saw it (``runtime.engagement``); ``pending`` while tier 2's model call is owed."""

    __tablename__ = "dispositions"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"))
    thread_id: Mapped[str] = mapped_column(String(40))
    bot_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    disposition: Mapped[str] = mapped_column(String(8))  # engage | observe | ignore
    tier: Mapped[int] = mapped_column(Integer)
    signal: Mapped[str] = mapped_column(String(24))
    reason: Mapped[str] = mapped_column(Text)
    pending: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime]

    __table_args__ = (
        CheckConstraint("disposition in ('engage', 'observe', 'ignore')", name="ck_disposition"),
        Index("uq_dispositions_message_bot", "message_id", "bot_id", unique=True),
        Index(
            "ix_dispositions_pending",
            "id",
            sqlite_where=text("pending = 1"),
            postgresql_where=text("pending"),
        ),
    )


class Disposal(Base):
    """A trigger that was admitted to a bot's mailbox and dropped without being served (DESIGN §7,
    invariant 13): shed, stale, collapsed, cancelled, attempts exhausted… No foreign keys: like the
    activity log it outlives what it describes (a ``thread_deleted`` row names a thread that is gone)."""

    __tablename__ = "disposals"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    bot_id: Mapped[str] = mapped_column(String(40))
    thread_id: Mapped[str] = mapped_column(String(40))
    message_ids: Mapped[list[str]] = mapped_column(default=list)
    item_ids: Mapped[list[str]] = mapped_column(default=list)
    reason: Mapped[str] = mapped_column(String(24))
    trigger_age_s: Mapped[float | None] = mapped_column(Float)
    bound: Mapped[float | None] = mapped_column(Float)
    queue_depth: Mapped[int | None] = mapped_column(Integer)
    collapsed_count: Mapped[int | None] = mapped_column(Integer)
    run_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime]

    __table_args__ = (
        CheckConstraint(
            "reason in ('shed', 'stale', 'collapsed', 'cancelled', 'bot_disabled', 'thread_deleted', "
            "'attempts_exhausted')",
            name="ck_disposal_reason",
        ),
        Index("ix_disposals_bot", "bot_id", "id"),
        Index("ix_disposals_thread", "thread_id", "id"),
    )
