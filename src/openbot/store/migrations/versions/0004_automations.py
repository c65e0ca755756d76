"""automations and their occurrences

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 14:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Scheduled posts (cron or one-shot) and one row per scheduled time that came."""
    op.create_table(
        "automations",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("bot_id", sa.String(length=40), nullable=False),
        sa.Column("owner_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("cron", sa.String(length=200), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("catch_up", sa.String(length=8), nullable=False),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["actors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["owner_id"], ["actors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_automations_bot_id", "automations", ["bot_id"], unique=False)
    op.create_index("ix_automations_due", "automations", ["enabled", "next_run_at"], unique=False)
    op.create_table(
        "automation_occurrences",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("automation_id", sa.String(length=40), nullable=False),
        sa.Column("scheduled_for", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("message_id", sa.String(length=40), nullable=True),
        sa.Column("thread_id", sa.String(length=40), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("fired_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status in ('fired', 'caught_up', 'skipped', 'failed')", name="ck_occurrence_status"
        ),
        sa.ForeignKeyConstraint(["automation_id"], ["automations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "uq_occurrence_once", "automation_occurrences", ["automation_id", "scheduled_for"], unique=True
    )


def downgrade() -> None:
    op.drop_index("uq_occurrence_once", table_name="automation_occurrences")
    op.drop_table("automation_occurrences")
    op.drop_index("ix_automations_due", table_name="automations")
    op.drop_index("ix_automations_bot_id", table_name="automations")
    op.drop_table("automations")
