"""actor tokens

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 14:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Bearer tokens that act as one actor, stored as their SHA-256."""
    op.create_table(
        "actor_tokens",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("actor_id", sa.String(length=40), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["actor_id"], ["actors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("actor_tokens", schema=None) as batch_op:
        batch_op.create_index("ix_actor_tokens_actor_id", ["actor_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("actor_tokens", schema=None) as batch_op:
        batch_op.drop_index("ix_actor_tokens_actor_id")
    op.drop_table("actor_tokens")
