"""drafts and bots' workspace access

Revision ID: 0008
Revises: 0003
Create Date: 2026-12-01 14:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Drafts a bot stages for a person to send or reject; ``bot_profiles.workspace_access``."""
    with op.batch_alter_table("bot_profiles", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("workspace_access", sa.String(length=8), nullable=False, server_default="read")
        )
    op.create_table(
        "drafts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("bot_id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("run_id", sa.String(length=40), nullable=True),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("target_thread_id", sa.String(length=40), nullable=True),
        sa.Column("target_actor_id", sa.String(length=40), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("message_id", sa.String(length=40), nullable=True),
        sa.Column("decided_by_id", sa.String(length=40), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status in ('pending', 'sent', 'rejected')", name="ck_draft_status"),
        sa.ForeignKeyConstraint(["bot_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["target_actor_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["decided_by_id"], ["actors.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.create_index("ix_drafts_status", ["status", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.drop_index("ix_drafts_status")
    op.drop_table("drafts")
    with op.batch_alter_table("bot_profiles", schema=None) as batch_op:
        batch_op.drop_column("workspace_access")
