"""a lexical index over messages (recall_messages)

Revision ID: 0013
Revises: 0003
Create Date: 2026-12-01 15:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0003"
branch_labels = None
depends_on = None

# SQLite: an FTS5 table with external content (the text stays in ``messages``), kept by triggers.
# Messages are never edited, so inserts and deletes are all it follows. (VACUUM may renumber the
# rowids of a table without an INTEGER PRIMARY KEY: run ``INSERT INTO messages_fts(messages_fts)
# VALUES('rebuild')`` after one.)
_SQLITE = [
    "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='rowid')",
    "CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN "
    "INSERT INTO messages_fts(rowid, content) VALUES (new.rowid, new.content); END",
    "CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN "
    "INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.rowid, old.content); END",
    "INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')",
]
# PostgreSQL: a generated tsvector column (the database keeps it current) under a GIN index.
_POSTGRES = [
    "ALTER TABLE messages ADD COLUMN search tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english', content)) STORED",
    "CREATE INDEX ix_messages_search ON messages USING GIN (search)",
]


def upgrade() -> None:
    for statement in _POSTGRES if op.get_bind().dialect.name == "postgresql" else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_messages_search")
        op.execute("ALTER TABLE messages DROP COLUMN IF EXISTS search")
        return
    for name in ("messages_fts_ad", "messages_fts_ai"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS messages_fts")
