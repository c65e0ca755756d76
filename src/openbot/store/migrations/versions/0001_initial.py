"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29 21:12:42.924697
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Every table, each created (with its indexes) by a function of its own, in dependency order."""
    _create_activity_log()
    _create_actors()
    _create_events()
    _create_settings()
    _create_bot_profiles()
    _create_external_profiles()
    _create_threads()
    _create_messages()
    _create_runs()
    _create_thread_participants()
    _create_thread_todo_lists()
    _create_held_handoffs()
    _create_inbox_items()
    _create_run_events()


def _create_activity_log() -> None:
    op.create_table(
        "activity_log",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("level", sa.String(length=16), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=True),
        sa.Column("actor_id", sa.String(length=40), nullable=True),
        sa.Column("actor_handle", sa.String(length=32), nullable=True),
        sa.Column("run_id", sa.String(length=40), nullable=True),
        sa.Column("item_id", sa.String(length=40), nullable=True),
        sa.Column("message_id", sa.String(length=40), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("activity_log", schema=None) as batch_op:
        batch_op.create_index("ix_activity_thread", ["thread_id", "id"], unique=False)


def _create_actors() -> None:
    op.create_table(
        "actors",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("handle", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind in ('bot', 'human', 'external')", name="ck_actor_kind"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("handle"),
    )


def _create_events() -> None:
    op.create_table(
        "events",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index("ix_events_thread", ["thread_id", "id"], unique=False)


def _create_settings() -> None:
    op.create_table(
        "settings",
        sa.Column("key", sa.String(length=100), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )


def _create_bot_profiles() -> None:
    op.create_table(
        "bot_profiles",
        sa.Column("actor_id", sa.String(length=40), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("instructions", sa.Text(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("model_settings", sa.JSON(), nullable=False),
        sa.Column("tools", sa.JSON(), nullable=False),
        sa.Column("approval_tools", sa.JSON(), nullable=False),
        sa.Column("memory_enabled", sa.Boolean(), nullable=False),
        sa.Column("max_parallel_threads", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["actor_id"], ["actors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("actor_id"),
    )


def _create_external_profiles() -> None:
    op.create_table(
        "external_profiles",
        sa.Column("actor_id", sa.String(length=40), nullable=False),
        sa.Column("webhook_url", sa.Text(), nullable=True),
        sa.Column("webhook_secret", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["actor_id"], ["actors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("actor_id"),
    )


def _create_threads() -> None:
    op.create_table(
        "threads",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("default_bot_id", sa.String(length=40), nullable=True),
        sa.Column("working_directory", sa.Text(), nullable=True),
        sa.Column("hop_limit_notified", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_message_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("kind in ('task', 'channel')", name="ck_thread_kind"),
        sa.ForeignKeyConstraint(["default_bot_id"], ["actors.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )


def _create_messages() -> None:
    op.create_table(
        "messages",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("sender_id", sa.String(length=40), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("mentions", sa.JSON(), nullable=False),
        sa.Column("hop", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=40), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["sender_id"], ["actors.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.create_index("ix_messages_thread", ["thread_id", "id"], unique=False)


def _create_runs() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("bot_id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("trigger_message_ids", sa.JSON(), nullable=False),
        sa.Column("interrupt", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("hop", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("model_calls", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_token", sa.Integer(), nullable=False),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status in ('queued', 'running', 'waiting_human', 'completed', 'failed', 'cancelled')",
            name="ck_run_status",
        ),
        sa.ForeignKeyConstraint(["bot_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_status", ["status"], unique=False)
        batch_op.create_index("ix_runs_thread", ["thread_id", "id"], unique=False)
        batch_op.create_index(
            "uq_runs_one_active_per_bot_thread",
            ["bot_id", "thread_id"],
            unique=True,
            sqlite_where=sa.text("status in ('queued', 'running', 'waiting_human')"),
            postgresql_where=sa.text("status in ('queued', 'running', 'waiting_human')"),
        )


def _create_thread_participants() -> None:
    op.create_table(
        "thread_participants",
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("actor_id", sa.String(length=40), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["actor_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("thread_id", "actor_id"),
    )


def _create_thread_todo_lists() -> None:
    op.create_table(
        "thread_todo_lists",
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("bot_id", sa.String(length=40), nullable=False),
        sa.Column("todos", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("thread_id", "bot_id"),
    )


def _create_held_handoffs() -> None:
    op.create_table(
        "held_handoffs",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("sender_id", sa.String(length=40), nullable=False),
        sa.Column("target_id", sa.String(length=40), nullable=False),
        sa.Column("message_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["sender_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["target_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("held_handoffs", schema=None) as batch_op:
        batch_op.create_index("ix_held_sender", ["thread_id", "sender_id", "status"], unique=False)


def _create_inbox_items() -> None:
    op.create_table(
        "inbox_items",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("actor_id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("message_id", sa.String(length=40), nullable=True),
        sa.Column("run_id", sa.String(length=40), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("claimed_by_run", sa.String(length=40), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(kind = 'message' AND message_id IS NOT NULL AND run_id IS NULL) OR (kind <> 'message' AND run_id IS NOT NULL AND message_id IS NULL)",
            name="ck_item_points_at_one_thing",
        ),
        sa.CheckConstraint("kind in ('message', 'question', 'resume')", name="ck_item_kind"),
        sa.ForeignKeyConstraint(["actor_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("inbox_items", schema=None) as batch_op:
        batch_op.create_index("ix_inbox_actor_status", ["actor_id", "status", "id"], unique=False)
        batch_op.create_index("ix_inbox_thread", ["thread_id", "actor_id", "status"], unique=False)


def _create_run_events() -> None:
    op.create_table(
        "run_events",
        sa.Column("run_id", sa.String(length=40), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "seq"),
    )


def downgrade() -> None:
    # ### commands auto generated by Alembic - please adjust! ###
    op.drop_table("run_events")
    with op.batch_alter_table("inbox_items", schema=None) as batch_op:
        batch_op.drop_index("ix_inbox_thread")
        batch_op.drop_index("ix_inbox_actor_status")

    op.drop_table("inbox_items")
    with op.batch_alter_table("held_handoffs", schema=None) as batch_op:
        batch_op.drop_index("ix_held_sender")

    op.drop_table("held_handoffs")
    op.drop_table("thread_todo_lists")
    op.drop_table("thread_participants")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_runs_one_active_per_bot_thread",
            sqlite_where=sa.text("status in ('queued', 'running', 'waiting_human')"),
            postgresql_where=sa.text("status in ('queued', 'running', 'waiting_human')"),
        )
        batch_op.drop_index("ix_runs_thread")
        batch_op.drop_index("ix_runs_status")

    op.drop_table("runs")
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.drop_index("ix_messages_thread")

    op.drop_table("messages")
    op.drop_table("threads")
    op.drop_table("external_profiles")
    op.drop_table("bot_profiles")
    op.drop_table("settings")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_thread")

    op.drop_table("events")
    op.drop_table("actors")
    with op.batch_alter_table("activity_log", schema=None) as batch_op:
        batch_op.drop_index("ix_activity_thread")

    op.drop_table("activity_log")
    # ### end Alembic commands ###
