"""What leaves the server: webhook deliveries and drafts waiting for a person."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from openbot.store.models.base import Base


class WebhookDelivery(Base):
    """One item that reached an external actor's mailbox, to be POSTed to its ``webhook_url``.

    Written in the transaction that enqueued the item, so a delivery exists exactly when its mail
    does; ``next_attempt_at`` is when the delivery loop tries next (also a claim: a process that
    dies mid-request leaves it due again after the claim window).
    """

    __tablename__ = "webhook_deliveries"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    actor_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(32))  # message.created | question.created
    message_id: Mapped[str | None] = mapped_column(String(40))
    run_id: Mapped[str | None] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending|delivered|failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        CheckConstraint("status in ('pending', 'delivered', 'failed')", name="ck_delivery_status"),
        Index("ix_deliveries_due", "status", "next_attempt_at"),
        Index("ix_deliveries_actor", "actor_id", "id"),
    )


class Draft(Base):
    """An outgoing message a bot staged with ``save_draft``: only a person sends it (approve,
    optionally edited) or rejects it (with a reason posted where the bot will see it)."""

    __tablename__ = "drafts"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    run_id: Mapped[str | None] = mapped_column(String(40))
    title: Mapped[str] = mapped_column(String(200))
    content: Mapped[str] = mapped_column(Text)
    target_thread_id: Mapped[str | None] = mapped_column(String(40))
    target_actor_id: Mapped[str | None] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending | sent | rejected
    reason: Mapped[str | None] = mapped_column(Text)
    message_id: Mapped[str | None] = mapped_column(String(40))  # what approving it posted
    decided_by_id: Mapped[str | None] = mapped_column(ForeignKey("actors.id", ondelete="SET NULL"))
    decided_at: Mapped[datetime | None]
    created_at: Mapped[datetime]

    __table_args__ = (
        CheckConstraint("status in ('pending', 'sent', 'rejected')", name="ck_draft_status"),
        Index("ix_drafts_status", "status", "id"),
    )
