"""bot memory and run contexts

Revision ID: 0006
Revises: 0003
Create Date: 2026-12-01 14:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0003"
branch_labels = None
depends_on = None

# SQLite: an FTS5 index over memories.content with external content (the text is stored once, in
# memories) keyed by the table's rowid, kept in sync by triggers. Updates that leave the content
# alone (access bumps, archiving) do not touch the index. memories has no INTEGER PRIMARY KEY, so a
# VACUUM may renumber rowids: run ``INSERT INTO memories_fts(memories_fts) VALUES('rebuild')`` after
# one (the store never VACUUMs).
_SQLITE_INDEX = [
    "CREATE VIRTUAL TABLE memories_fts USING fts5("
    "content, content='memories', content_rowid='rowid', tokenize='porter unicode61')",
    "CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN "
    "INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content); END",
    "CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.rowid, old.content); END",
    "CREATE TRIGGER memories_fts_au AFTER UPDATE OF content ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.rowid, old.content); "
    "INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content); END",
]
# PostgreSQL: a generated tsvector column (the database keeps it current) under a GIN index.
_POSTGRES_INDEX = [
    "ALTER TABLE memories ADD COLUMN search tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english', content)) STORED",
    "CREATE INDEX ix_memories_search ON memories USING GIN (search)",
]


def upgrade() -> None:
    """memories (with its lexical index) and run_contexts."""
    op.create_table(
        "memories",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("bot_id", sa.String(length=40), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("segment", sa.String(length=16), nullable=False),
        sa.Column("tier", sa.String(length=16), nullable=False),
        sa.Column("importance", sa.Float(), nullable=False),
        sa.Column("access_count", sa.Integer(), nullable=False),
        sa.Column("last_accessed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lifecycle", sa.String(length=16), nullable=False),
        sa.Column("supersedes", sa.String(length=40), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=True),
        sa.Column("origin_thread_id", sa.String(length=40), nullable=True),
        sa.Column("origin_run_id", sa.String(length=40), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "segment in ('identity', 'preference', 'correction', 'relationship', 'project', "
            "'knowledge', 'context')",
            name="ck_memory_segment",
        ),
        sa.CheckConstraint("tier in ('short', 'long', 'permanent')", name="ck_memory_tier"),
        sa.CheckConstraint("lifecycle in ('active', 'archived')", name="ck_memory_lifecycle"),
        sa.CheckConstraint(
            "source in ('tool', 'reflection', 'human', 'consolidation')", name="ck_memory_source"
        ),
        sa.CheckConstraint("importance >= 0 AND importance <= 1", name="ck_memory_importance"),
        sa.ForeignKeyConstraint(["bot_id"], ["actors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_memories_bot", "memories", ["bot_id", "lifecycle", "id"], unique=False)
    statements = _POSTGRES_INDEX if op.get_bind().dialect.name == "postgresql" else _SQLITE_INDEX
    for statement in statements:
        op.execute(statement)
    op.create_table(
        "run_contexts",
        sa.Column("run_id", sa.String(length=40), nullable=False),
        sa.Column("system", sa.Text(), nullable=False),
        sa.Column("messages", sa.JSON(), nullable=False),
        sa.Column("memories", sa.JSON(), nullable=False),
        sa.Column("scoped", sa.Boolean(), nullable=False),
        sa.Column("omitted", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id"),
    )


def downgrade() -> None:
    op.drop_table("run_contexts")
    if op.get_bind().dialect.name != "postgresql":
        for name in ("memories_fts_au", "memories_fts_ad", "memories_fts_ai"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS memories_fts")
    op.drop_index("ix_memories_bot", table_name="memories")
    op.drop_table("memories")
