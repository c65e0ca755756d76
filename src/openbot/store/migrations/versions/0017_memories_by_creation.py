"""memories listed newest first by when they were made

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05 21:10:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """A bot's memories are listed newest first by ``created_at`` (an import sets it), not by id,
    which is the order they were written in: the listing reads this index backwards."""
    op.create_index("ix_memories_bot_created", "memories", ["bot_id", "lifecycle", "created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_memories_bot_created", table_name="memories")
