"""The lexical index over a thread's messages (``recall_messages``), reached through
``Dialect.message_index``: FTS5 with bm25 on SQLite, the generated ``messages.search`` tsvector
with ``ts_rank`` on PostgreSQL (migration 0013). The database keeps both current on every insert.

:meth:`MessageIndex.search` is one statement, built once and bound per call (``thread_id``,
``query``, ``limit``): the best matches in the thread, each with its sender's handle, its position
in the thread (for ``read_history``'s offset) and its score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Float, Select, String, bindparam, column, func, literal_column, select, table, true
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import ColumnElement

from openbot.core.memory import fts5_query, tsquery
from openbot.store.models import Actor, Message

_EARLIER = aliased(Message)


def _position() -> Any:
    """How many messages of the thread come before this one (``read_history``'s offset)."""
    return (
        select(func.count())
        .select_from(_EARLIER)
        .where(_EARLIER.thread_id == Message.thread_id, _EARLIER.id < Message.id)
        .scalar_subquery()
    )


def _columns() -> tuple[Any, ...]:
    return (Message.id, _position().label("position"), Actor.handle, Message.content)


class MessageIndex:
    name = "lexical"

    def query(self, terms: Sequence[str]) -> str:
        raise NotImplementedError

    def search(self) -> Select[Any]:
        raise NotImplementedError


class Fts5MessageIndex(MessageIndex):
    def query(self, terms: Sequence[str]) -> str:
        return fts5_query(terms)

    def search(self) -> Select[Any]:
        fts = table("messages_fts", column("rowid"))
        rank: ColumnElement[float] = func.bm25(literal_column("messages_fts"), type_=Float)
        return (
            select(*_columns(), (-rank).label("score"))
            .select_from(Message)
            .join(fts, fts.c.rowid == literal_column("messages.rowid"))
            .outerjoin(Actor, Actor.id == Message.sender_id)
            .where(literal_column("messages_fts").op("MATCH")(bindparam("query", type_=String)))
            .where(Message.thread_id == bindparam("thread_id", type_=String))
            .order_by(rank, Message.id.desc())
            .limit(bindparam("limit"))
        )


class TsvectorMessageIndex(MessageIndex):
    """The query is parsed once, in a MATERIALIZED CTE (see ``store.memory_index``)."""

    def query(self, terms: Sequence[str]) -> str:
        return tsquery(terms)

    def search(self) -> Select[Any]:
        vector: ColumnElement[Any] = literal_column("messages.search")
        parsed = (
            select(func.to_tsquery(literal_column("'english'"), bindparam("query", type_=String)).label("q"))
            .cte("msgq")
            .prefix_with("MATERIALIZED")
        )
        rank: ColumnElement[float] = func.ts_rank(vector, parsed.c.q, type_=Float)
        return (
            select(*_columns(), rank.label("score"))
            .select_from(parsed)
            .join(Message, true())
            .outerjoin(Actor, Actor.id == Message.sender_id)
            .where(vector.op("@@")(parsed.c.q))
            .where(Message.thread_id == bindparam("thread_id", type_=String))
            .order_by(rank.desc(), Message.id.desc())
            .limit(bindparam("limit"))
        )
