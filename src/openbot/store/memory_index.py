"""The lexical memory index on each database, reached through ``Dialect.memory_index``.

Both indexes are kept by the database itself (migration 0006), so every write path — the API,
the tools, reflection, consolidation, a cascade from a deleted bot — keeps them current:

- SQLite: ``memories_fts``, an FTS5 table with external content (the text is stored once, in
  ``memories``), synced by triggers; ranked by ``bm25`` (lower is better, so the score is its
  negation).
- PostgreSQL: the generated ``memories.search`` tsvector under a GIN index; ranked by ``ts_rank``.

``ranked(*columns)`` is a SELECT of the given columns plus ``score`` over the bot's memories that
match ``:query``, best first, ``:limit`` rows; callers add their filters. Statements are meant to be
built once and bound per call (``bot_id``, ``query``, ``limit``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Float, Select, String, bindparam, column, func, literal_column, select, table, true
from sqlalchemy.sql.elements import ColumnElement

from openbot.core.memory import fts5_query, tsquery
from openbot.store.models import Memory


class LexicalIndex:
    name = "lexical"

    def query(self, terms: Sequence[str]) -> str:
        raise NotImplementedError

    def ranked(self, *columns: Any) -> Select[Any]:
        raise NotImplementedError


class Fts5Index(LexicalIndex):
    def query(self, terms: Sequence[str]) -> str:
        return fts5_query(terms)

    def ranked(self, *columns: Any) -> Select[Any]:
        fts = table("memories_fts", column("rowid"))
        rank: ColumnElement[float] = func.bm25(literal_column("memories_fts"), type_=Float)
        return (
            select(*columns, (-rank).label("score"))
            .select_from(Memory)
            .join(fts, fts.c.rowid == literal_column("memories.rowid"))
            .where(literal_column("memories_fts").op("MATCH")(bindparam("query", type_=String)))
            .where(Memory.bot_id == bindparam("bot_id", type_=String))
            .order_by(rank)
            .limit(bindparam("limit"))
        )


class TsvectorIndex(LexicalIndex):
    """The query is parsed once, in a MATERIALIZED CTE joined to the memories. Written inline,
    ``to_tsquery($1)`` is no constant in a prepared (generic) plan: PostgreSQL parsed it again for
    every row it ranked (0.4 s for 10,000 memories). As an InitPlan it is parsed once but hides the
    query from the planner, which then scans every row; from the CTE the GIN index is used."""

    def query(self, terms: Sequence[str]) -> str:
        return tsquery(terms)

    def ranked(self, *columns: Any) -> Select[Any]:
        search: ColumnElement[Any] = literal_column("memories.search")
        parsed = (
            select(func.to_tsquery(literal_column("'english'"), bindparam("query", type_=String)).label("q"))
            .cte("tsq")
            .prefix_with("MATERIALIZED")
        )
        rank: ColumnElement[float] = func.ts_rank(search, parsed.c.q, type_=Float)
        return (
            select(*columns, rank.label("score"))
            .select_from(parsed)
            .join(Memory, true())
            .where(search.op("@@")(parsed.c.q))
            .where(Memory.bot_id == bindparam("bot_id", type_=String))
            .order_by(rank.desc())
            .limit(bindparam("limit"))
        )
