"""The migrations and the models describe one schema, with one head.

Features add tables on branches of their own (merged by a revision with several parents); this
catches a model whose migration drifted, and a branch left unmerged. The lexical indexes are the
migrations' own (FTS5 tables on SQLite, generated ``search`` columns on PostgreSQL): not models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from conftest import PG_URL
from openbot.store.db import sync_url
from openbot.store.migrate import alembic_config, upgrade
from openbot.store.models import Base


def test_the_migrations_have_one_head() -> None:
    assert len(ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads()) == 1


def _index_only(change: Any) -> bool:
    """A difference that is one of the lexical indexes the migrations keep beside the models (or a
    table of the checkpointer that shares the database)."""
    if isinstance(change, list):
        return all(_index_only(c) for c in change)
    kind = change[0]
    if kind == "remove_table":  # the FTS5 tables, and LangGraph's checkpointer (same database)
        return "_fts" in change[1].name or change[1].name.startswith("checkpoint")
    if kind == "remove_column":
        return change[3].name == "search"
    if kind == "remove_index":
        name = change[1].name
        return name in ("ix_memories_search", "ix_messages_search") or name.startswith("checkpoint")
    return False


@pytest.mark.parametrize("backend", ["sqlite", *(["postgresql"] if PG_URL else [])])
def test_the_migrated_schema_is_the_models_schema(backend: str, tmp_path: Path) -> None:
    url = PG_URL if backend == "postgresql" else f"sqlite:///{tmp_path / 'schema.db'}"
    assert url is not None
    upgrade(url)
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            drift = [c for c in compare_metadata(context, Base.metadata) if not _index_only(c)]
    finally:
        engine.dispose()
    assert drift == []
