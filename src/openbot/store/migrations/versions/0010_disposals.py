"""disposals and bots' mailbox bound

Revision ID: 0010
Revises: 0003
Create Date: 2026-12-01 14:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Triggers admitted and then dropped (DESIGN §7, invariant 13); ``bot_profiles.max_queued``."""
    with op.batch_alter_table("bot_profiles", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_queued", sa.Integer(), nullable=False, server_default="200"))
    op.create_table(
        "disposals",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("bot_id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("message_ids", sa.JSON(), nullable=False),
        sa.Column("item_ids", sa.JSON(), nullable=False),
        sa.Column("reason", sa.String(length=24), nullable=False),
        sa.Column("trigger_age_s", sa.Float(), nullable=True),
        sa.Column("bound", sa.Float(), nullable=True),
        sa.Column("queue_depth", sa.Integer(), nullable=True),
        sa.Column("collapsed_count", sa.Integer(), nullable=True),
        sa.Column("run_id", sa.String(length=40), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "reason in ('shed', 'stale', 'collapsed', 'cancelled', 'bot_disabled', 'thread_deleted', "
            "'attempts_exhausted')",
            name="ck_disposal_reason",
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("disposals", schema=None) as batch_op:
        batch_op.create_index("ix_disposals_bot", ["bot_id", "id"], unique=False)
        batch_op.create_index("ix_disposals_thread", ["thread_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("disposals", schema=None) as batch_op:
        batch_op.drop_index("ix_disposals_thread")
        batch_op.drop_index("ix_disposals_bot")
    op.drop_table("disposals")
    with op.batch_alter_table("bot_profiles", schema=None) as batch_op:
        batch_op.drop_column("max_queued")
