"""Reads that run often (on every status poll, every maintenance pass, every pass of the gate's
loop) must not grow with the tables: SQLite's plan for each seeks an index instead of scanning a
table that keeps every row ever written."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.dialects import sqlite

from openbot.runtime.engagement.classifier import PENDING
from openbot.runtime.engagement.hatch import _RECENT
from openbot.runtime.governor.overflow import OVER
from openbot.runtime.service.observe import _COUNTS
from openbot.store.migrate import upgrade


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    path = Path(tmp_path_factory.mktemp("plans")) / "openbot.db"
    upgrade(f"sqlite:///{path}")
    return sqlite3.connect(path)


# The team's own tables (a row a bot), a subquery's few rows, and partial indexes that hold only
# the rows still to be handled may be scanned.
_SMALL = ("SCAN actors", "SCAN bot_profiles", "SCAN anon_", "INDEX ix_dispositions_pending")


def plan(database: sqlite3.Connection, stmt: Any, **params: Any) -> list[str]:
    text = str(
        stmt.params(**params).compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True})
    )
    return [row[3] for row in database.execute(f"EXPLAIN QUERY PLAN {text}")]


@pytest.mark.parametrize(
    ("name", "stmt", "params"),
    [
        ("status: runs in flight, open mail, owed gate decisions", _COUNTS.statement, {}),
        ("escape hatch", _RECENT, {"thread_id": "thr_1", "message_id": "msg_1", "bot_id": "bot_1"}),
        ("the gate's pending candidates", PENDING, {}),
        ("over-full mailboxes", OVER, {}),
    ],
)
def test_a_frequent_read_seeks_an_index(
    database: sqlite3.Connection, name: str, stmt: Any, params: dict[str, Any]
) -> None:
    steps = plan(database, stmt, **params)
    scans = [s for s in steps if s.startswith("SCAN") and not any(t in s for t in _SMALL)]
    assert scans == [], f"{name}: {steps}"
