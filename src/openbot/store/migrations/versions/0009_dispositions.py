"""dispositions, bots' aliases and threads' require_mention

Revision ID: 0009
Revises: 0003
Create Date: 2026-12-01 14:55:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """What each bot decided to do with each message (DESIGN §7, invariant 13), the names tier 1
    matches (``bot_profiles.aliases``) and the per-thread ``require_mention`` override."""
    with op.batch_alter_table("bot_profiles", schema=None) as batch_op:
        batch_op.add_column(sa.Column("aliases", sa.JSON(), nullable=False, server_default="[]"))
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("require_mention", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.create_table(
        "dispositions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True),
        sa.Column("message_id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("bot_id", sa.String(length=40), nullable=False),
        sa.Column("disposition", sa.String(length=8), nullable=False),
        sa.Column("tier", sa.Integer(), nullable=False),
        sa.Column("signal", sa.String(length=24), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("pending", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["bot_id"], ["actors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.CheckConstraint("disposition in ('engage', 'observe', 'ignore')", name="ck_disposition"),
    )
    with op.batch_alter_table("dispositions", schema=None) as batch_op:
        batch_op.create_index("uq_dispositions_message_bot", ["message_id", "bot_id"], unique=True)
        batch_op.create_index("ix_dispositions_thread_bot", ["thread_id", "bot_id", "id"], unique=False)
        batch_op.create_index(
            "ix_dispositions_pending",
            ["pending"],
            unique=False,
            sqlite_where=sa.text("pending"),
            postgresql_where=sa.text("pending"),
        )


def downgrade() -> None:
    op.drop_table("dispositions")
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.drop_column("require_mention")
    with op.batch_alter_table("bot_profiles", schema=None) as batch_op:
        batch_op.drop_column("aliases")
