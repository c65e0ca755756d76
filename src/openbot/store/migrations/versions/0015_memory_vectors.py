"""memory vectors (relevance by embeddings, OPENBOT_EMBEDDINGS)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01 15:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """One unit-length vector per memory, under the model that made it."""
    op.create_table(
        "memory_vectors",
        sa.Column("memory_id", sa.String(length=40), nullable=False),
        sa.Column("bot_id", sa.String(length=40), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("vector", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["memory_id"], ["memories.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["bot_id"], ["actors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("memory_id"),
    )
    with op.batch_alter_table("memory_vectors", schema=None) as batch_op:
        batch_op.create_index("ix_memory_vectors_bot", ["bot_id", "model"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("memory_vectors", schema=None) as batch_op:
        batch_op.drop_index("ix_memory_vectors_bot")
    op.drop_table("memory_vectors")
