"""dispositions indexed for how they are read: by message, and the pending ones by id

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 21:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """A post writes one disposition per bot in the thread; keyed by thread and bot, those rows
    landed on as many index pages as there are bots, and the commit wrote every one of them (on
    SQLite ~0.4 ms a post with 20 bots). The escape hatch, the index's one reader, now finds a bot's
    recent dispositions through the thread's latest messages and ``uq_dispositions_message_bot``."""
    op.drop_index("ix_dispositions_thread_bot", table_name="dispositions")
    # The gate's pending candidates, oldest first: an index on ``id`` over the pending rows only,
    # with the predicate spelled as the query spells it on SQLite (``pending = 1``; SQLite uses a
    # partial index only for a term it can match). Keyed by ``pending``, it lost to a scan of the
    # whole table in id order, on every pass of the gate's loop.
    op.drop_index("ix_dispositions_pending", table_name="dispositions")
    op.create_index(
        "ix_dispositions_pending",
        "dispositions",
        ["id"],
        sqlite_where=sa.text("pending = 1"),
        postgresql_where=sa.text("pending"),
    )


def downgrade() -> None:
    op.drop_index("ix_dispositions_pending", table_name="dispositions")
    op.create_index(
        "ix_dispositions_pending",
        "dispositions",
        ["pending"],
        sqlite_where=sa.text("pending"),
        postgresql_where=sa.text("pending"),
    )
    op.create_index("ix_dispositions_thread_bot", "dispositions", ["thread_id", "bot_id", "id"])
