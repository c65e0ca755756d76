"""Tables. Alembic migrations (``store/migrations``) are the only way the schema changes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both backends (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON, list[str]: JSON, datetime: UTCDateTime}


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


class ActorToken(Base):
    """A bearer token that acts as one actor. Only its SHA-256 is stored; the token is shown once."""

    __tablename__ = "actor_tokens"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    actor_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]


class TodoList(Base):
    __tablename__ = "thread_todo_lists"

    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"), primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True)
    todos: Mapped[list[Any]] = mapped_column(default=list)
    updated_at: Mapped[datetime]


class ActivityLog(Base):
    """The diagnostic timeline. No foreign keys: it outlives what it describes."""

    __tablename__ = "activity_log"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    event: Mapped[str] = mapped_column(String(64))
    level: Mapped[str] = mapped_column(String(16), default="info")
    summary: Mapped[str] = mapped_column(Text)
    thread_id: Mapped[str | None] = mapped_column(String(40))
    actor_id: Mapped[str | None] = mapped_column(String(40))
    actor_handle: Mapped[str | None] = mapped_column(String(32))
    run_id: Mapped[str | None] = mapped_column(String(40))
    item_id: Mapped[str | None] = mapped_column(String(40))
    message_id: Mapped[str | None] = mapped_column(String(40))
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_activity_thread", "thread_id", "id"),)


class Event(Base):
    """The journal (transactional outbox): one row per durable change, same transaction."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    type: Mapped[str] = mapped_column(String(64))
    thread_id: Mapped[str | None] = mapped_column(String(40))
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_events_thread", "thread_id", "id"),)


class Setting(Base):
    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[dict[str, Any]] = mapped_column(default=dict)


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
        Index("ix_dispositions_thread_bot", "thread_id", "bot_id", "id"),
        Index(
            "ix_dispositions_pending",
            "pending",
            sqlite_where=text("pending"),
            postgresql_where=text("pending"),
        ),
    )


__all__ = [
    "ActivityLog",
    "Actor",
    "Automation",
    "AutomationOccurrence",
    "Base",
    "BotProfile",
    "Disposal",
    "Disposition",
    "Draft",
    "Event",
    "ExternalProfile",
    "HeldHandoff",
    "IdempotencyKey",
    "InboxItem",
    "Memory",
    "Message",
    "PendingReflection",
    "PreparedContext",
    "Run",
    "RunEvent",
    "Setting",
    "Thread",
    "ThreadParticipant",
    "TodoList",
    "WebhookDelivery",
]
