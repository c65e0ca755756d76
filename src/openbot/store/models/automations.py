"""Automations and their durable occurrences."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from openbot.store.models.base import Base


class Automation(Base):
    """A scheduled post: ``content`` from ``owner`` to ``bot`` on a ``cron`` (in ``timezone``) or once
    ``at``, into ``thread_id`` or a new thread. ``thread_id`` has no foreign key: a firing into a
    thread deleted since is recorded as a failed occurrence, not silently redirected."""

    __tablename__ = "automations"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16), default="message")  # message | heartbeat
    title: Mapped[str] = mapped_column(String(200), default="")
    content: Mapped[str] = mapped_column(Text, default="")
    cron: Mapped[str | None] = mapped_column(String(200))
    at: Mapped[datetime | None]
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    thread_id: Mapped[str | None] = mapped_column(String(40))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    catch_up: Mapped[str] = mapped_column(String(8), default="once")  # once | skip
    next_run_at: Mapped[datetime | None]
    last_run_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (Index("ix_automations_due", "enabled", "next_run_at"),)


class AutomationOccurrence(Base):
    """One scheduled time of an automation, written in the transaction that posts its message. The
    unique index is what makes a firing happen once across processes (``runtime.automations``)."""

    __tablename__ = "automation_occurrences"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    automation_id: Mapped[str] = mapped_column(ForeignKey("automations.id", ondelete="CASCADE"))
    scheduled_for: Mapped[datetime]
    status: Mapped[str] = mapped_column(String(16))  # fired | caught_up | skipped | failed
    message_id: Mapped[str | None] = mapped_column(String(40))
    thread_id: Mapped[str | None] = mapped_column(String(40))
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    fired_at: Mapped[datetime]

    __table_args__ = (
        Index("uq_occurrence_once", "automation_id", "scheduled_for", unique=True),
        CheckConstraint("status in ('fired', 'caught_up', 'skipped', 'failed')", name="ck_occurrence_status"),
    )
