"""Actors (humans, bots, external systems), bot profiles and actor tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    ForeignKey,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from openbot.store.models.base import Base


class Actor(Base):
    __tablename__ = "actors"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # bot | human | external
    handle: Mapped[str] = mapped_column(String(32), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (CheckConstraint("kind in ('bot', 'human', 'external')", name="ck_actor_kind"),)


class BotProfile(Base):
    __tablename__ = "bot_profiles"

    actor_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True)
    description: Mapped[str] = mapped_column(Text, default="")
    instructions: Mapped[str] = mapped_column(Text, default="")
    model: Mapped[str] = mapped_column(String(200))
    model_settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    tools: Mapped[list[str]] = mapped_column(default=list)
    approval_tools: Mapped[list[str]] = mapped_column(default=list)
    memory_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    max_parallel_threads: Mapped[int] = mapped_column(Integer, default=1)
    max_queued: Mapped[int] = mapped_column(Integer, default=200)  # mailbox bound (the governor sheds above)
    aliases: Mapped[list[str]] = mapped_column(default=list)  # names tier 1 of the gate matches
    version: Mapped[int] = mapped_column(Integer, default=1)
    workspace_access: Mapped[str] = mapped_column(String(8), default="read")  # none | read | write


class ExternalProfile(Base):
    __tablename__ = "external_profiles"

    actor_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True)
    webhook_url: Mapped[str | None] = mapped_column(Text)
    webhook_secret: Mapped[str | None] = mapped_column(Text)


class ActorToken(Base):
    """A bearer token that acts as one actor. Only its SHA-256 is stored; the token is shown once."""

    __tablename__ = "actor_tokens"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    actor_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
