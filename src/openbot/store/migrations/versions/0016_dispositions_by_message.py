"""dispositions found by message only (the thread-and-bot index goes)

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 21:30:00.000000
"""

from __future__ import annotations

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


def downgrade() -> None:
    op.create_index("ix_dispositions_thread_bot", "dispositions", ["thread_id", "bot_id", "id"])
