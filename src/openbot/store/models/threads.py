"""Threads, their participants and messages, to-do lists, and idempotency keys of posts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from openbot.store.models.base import Base


class Thread(Base):
    __tablename__ = "threads"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    title: Mapped[str] = mapped_column(String(500), default="")
    kind: Mapped[str] = mapped_column(String(16), default="task")
    default_bot_id: Mapped[str | None] = mapped_column(ForeignKey("actors.id", ondelete="SET NULL"))
    working_directory: Mapped[str | None] = mapped_column(Text)
    hop_limit_notified: Mapped[bool] = mapped_column(Boolean, default=False)
    require_mention: Mapped[bool] = mapped_column(Boolean, default=False)  # channels: only a mention wakes
    created_at: Mapped[datetime]
    last_message_at: Mapped[datetime | None]

    __table_args__ = (CheckConstraint("kind in ('task', 'channel')", name="ck_thread_kind"),)


class ThreadParticipant(Base):
    __tablename__ = "thread_participants"

    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"), primary_key=True)
    actor_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True)
    joined_at: Mapped[datetime]


class Message(Base):
    __tablename__ = "messages"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    sender_id: Mapped[str | None] = mapped_column(ForeignKey("actors.id", ondelete="SET NULL"))
    content: Mapped[str] = mapped_column(Text)
    mentions: Mapped[list[str]] = mapped_column(default=list)
    hop: Mapped[int] = mapped_column(Integer, default=0)
    run_id: Mapped[str | None] = mapped_column(String(40))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_messages_thread", "thread_id", "id"),)


class TodoList(Base):
    __tablename__ = "thread_todo_lists"

    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"), primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True)
    todos: Mapped[list[Any]] = mapped_column(default=list)
    updated_at: Mapped[datetime]


class IdempotencyKey(Base):
    """A post made under an ``Idempotency-Key``: written in the post's own transaction, so a retry
    finds either both the message and this row or neither. The primary key is the guard against
    two concurrent first attempts."""

    __tablename__ = "idempotency_keys"

    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"), primary_key=True)
    sender_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"))
    response: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_idempotency_created", "created_at"),)
