"""pending reflections

Revision ID: 0007
Revises: 0003
Create Date: 2026-12-01 14:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """One row per (bot, thread) whose runs await reflection, written with the run's end."""
    op.create_table(
        "pending_reflections",
        sa.Column("bot_id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("from_message_id", sa.String(length=40), nullable=True),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("bot_id", "thread_id"),
    )
    with op.batch_alter_table("pending_reflections", schema=None) as batch_op:
        batch_op.create_index("ix_pending_reflections_last_run", ["last_run_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("pending_reflections", schema=None) as batch_op:
        batch_op.drop_index("ix_pending_reflections_last_run")
    op.drop_table("pending_reflections")
