"""Multi-row INSERTs on the fast path (``store.fast``): rows as mappings or as new ORM objects,
one statement per chunk, bound as SQLAlchemy would bind them, on the session's transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import groupby
from typing import Any

from sqlalchemy import Table
from sqlalchemy.engine import Dialect as SADialect
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.store import driver
from openbot.store.fast import bind_processor, connection_for, dialect_of


def table_of(entity: Any) -> Table:
    table = entity.__table__
    assert isinstance(table, Table)
    return table


class _Attributes:
    """How an ORM object's attributes map to its table's columns (``Message.metadata_`` is the
    column ``metadata``), with the Python-side defaults the ORM would fill in."""

    def __init__(self, cls: type[Any]) -> None:
        from sqlalchemy import inspect as sa_inspect

        props = list(sa_inspect(cls).column_attrs)
        self.table = table_of(cls)
        self.attrs = [(p.key, p.columns[0].key, default_of(p.columns[0])) for p in props]

    def params(self, row: Any) -> dict[str, Any]:
        state = row.__dict__
        out: dict[str, Any] = {}
        for attr, name, default in self.attrs:
            value = state.get(attr)
            if value is None and default is not None:
                value = default()
                setattr(row, attr, value)
            out[name] = value
        return out


def default_of(column: Any) -> Callable[[], Any] | None:
    """A column's Python-side default as a function of nothing (what the ORM would have filled in)."""
    default = column.default
    if default is None:
        return None
    if default.is_callable:
        return lambda: default.arg(None)
    return lambda: default.arg


_ATTRIBUTES: dict[type[Any], _Attributes] = {}


async def insert(session: AsyncSession, *rows: Any) -> None:
    """INSERT new ORM objects now, without the unit of work (one statement per run of objects of
    one class): they stay transient (the session does not track them), so change them before this
    call, never after."""
    for cls, group in groupby(rows, key=type):
        shape = _ATTRIBUTES.get(cls)
        if shape is None:
            shape = _ATTRIBUTES[cls] = _Attributes(cls)
        await insert_rows(session, shape.table, [shape.params(row) for row in group])


class _Rows:
    """Multi-row INSERT text for one table and dialect: one statement per chunk of rows."""

    def __init__(self, table: Table, dialect: SADialect) -> None:
        columns = [c for c in table.columns if c is not table.autoincrement_column]
        # Per column: its position, key, bind processor and Python-side default.
        self._plan = [
            (i, c.key, bind_processor(c.type, dialect), default_of(c)) for i, c in enumerate(columns)
        ]
        mark = "?" if dialect.paramstyle == "qmark" else "%s"
        self.head = f"INSERT INTO {table.name} ({', '.join(c.name for c in columns)}) VALUES "
        self.row = "(" + ", ".join(mark for _ in columns) + ")"
        keys = [c for c in table.primary_key.columns]
        self.returning = f" RETURNING {keys[0].name}" if len(keys) == 1 else ""
        self._sql: dict[tuple[int, bool], str] = {}

    def sql(self, count: int, returning: bool) -> str:
        text = self._sql.get((count, returning))
        if text is None:
            text = self.head + ", ".join([self.row] * count) + (self.returning if returning else "")
            self._sql[count, returning] = text
        return text

    def params(self, rows: Iterable[Any], read: Callable[[Any, str], Any] = dict.get) -> list[Any]:
        """Every row's values in column order, one flat list, bound as SQLAlchemy would bind them.
        A value that is the very object the row before held in that column (one timestamp for a
        post's twenty dispositions) is bound once: a datetime costs SQLite's bind processor more
        than the rest of its row."""
        out: list[Any] = []
        append = out.append
        last: list[Any] = [_UNBOUND] * len(self._plan)
        bound: list[Any] = [None] * len(self._plan)
        plan = self._plan
        for row in rows:
            for i, name, process, default in plan:
                value = read(row, name)
                if value is None and default is not None:
                    value = default()
                if process is not None and value is not None:
                    if value is last[i]:
                        value = bound[i]
                    else:
                        last[i] = value
                        value = bound[i] = process(value)
                append(value)
        return out


_UNBOUND = object()  # no value yet (``_Rows.params``)
_ROWS: dict[tuple[str, str], _Rows] = {}
CHUNK = 500  # rows per statement, well under SQLite's limit on bound parameters


def attribute(row: Any, name: str) -> Any:
    return getattr(row, name, None)


def rows_of(table: Table, dialect: SADialect) -> _Rows:
    """The multi-row INSERT of ``table`` on ``dialect`` (built once)."""
    shape = _ROWS.get((table.name, dialect.name))
    if shape is None:
        shape = _ROWS[table.name, dialect.name] = _Rows(table, dialect)
    return shape


async def insert_rows(
    session: AsyncSession, table: Table, rows: Sequence[Mapping[str, Any]], *, returning: bool = False
) -> list[Any]:
    """INSERT ``rows`` (column key → value; missing values take the column's default) in one
    statement per chunk; with ``returning``, the new primary keys in the order of ``rows``.

    SQLite assigns autoincrement keys in VALUES order, larger than any before, under the writer's
    lock; PostgreSQL draws them from the sequence in VALUES order too: sorted keys match the rows."""
    if not rows:
        return []
    connection, info = await connection_for(session)
    shape = rows_of(table, dialect_of(session))
    keys: list[Any] = []
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        params = shape.params(chunk)
        text = shape.sql(len(chunk), returning)
        found = await driver.send(connection, info, text, params, rows=returning)
        keys.extend(sorted(row[0] for row in found))
    return keys
