"""merge the feature branches (automations, webhooks, memory, memory upkeep, drafts, dispositions,
disposals, the message index) into one head

Revision ID: 0014
Revises: 0004, 0005, 0006, 0007, 0008, 0009, 0010, 0013
Create Date: 2026-12-01 15:30:00.000000

The features were built side by side, each on a branch off 0003 with tables of its own (no
foreign key crosses branches), so any order of the branches gives the same schema. New migrations
go on top of this one.
"""

from __future__ import annotations

revision = "0014"
down_revision = ("0004", "0005", "0006", "0007", "0008", "0009", "0010", "0013")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
