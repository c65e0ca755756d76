"""The hot path's statements, straight to the driver (the store's fast path, DESIGN §6).

A statement through the async ORM costs ~200 µs of Python around a SQLite call of a few µs
(``benchmarks.profile statement``); the same statement handed to the driver costs ~10 µs. The
hot units (post, claim, prepare, finish) run their statements here:

* a statement is written once in SQLAlchemy Core and compiled once per dialect, with its bind
  and result processors, so a call only binds values and converts the row it gets back — the same
  conversions the ORM applies, so rows written here read back identically through the ORM;
* it runs on the connection of the session's transaction, so it commits or rolls back with
  everything else the transaction wrote;
* ``store.driver`` sends it: synchronously on SQLite; on PostgreSQL as psycopg calls, prepared
  server-side after a few executions, the writes without results held and pipelined.

Rows come back as plain tuples (named by ``Row``-like attribute access through :class:`Record`),
never as ORM objects: nothing is added to the session's identity map, so a unit that reads here
must also write here (or flush first: :func:`execute` flushes pending ORM work before it runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from sqlalchemy.engine import Dialect as SADialect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement

from openbot.store import driver

Processor = Callable[[Any], Any]


class Record(tuple[Any, ...]):
    """A result row: a tuple whose values are also attributes, by column name (or label). The
    columns are named like the ORM attributes except ``Message.metadata_`` (column ``metadata``);
    ``store.columns.Columns`` names them by attribute."""

    __slots__ = ()
    _index: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        try:
            return self[self._index[name]]
        except KeyError:
            raise AttributeError(name) from None


def record_type(names: Sequence[str]) -> type[Record]:
    """A :class:`Record` class whose rows name their values ``names``.

    Each name is a property of the class (as a named tuple's fields are): reading one costs a
    fraction of what ``__getattr__``'s failed lookup first costs, and a run reads a few hundred.
    A name a tuple already has (``count``, ``index``) stays the tuple's, as before."""
    index = {n: i for i, n in enumerate(names)}
    fields = {n: property(itemgetter(i)) for n, i in index.items() if not hasattr(Record, n)}
    return type("Record", (Record,), {"__slots__": (), "_index": index, **fields})


@dataclass(frozen=True)
class _Compiled:
    sql: str
    named: bool  # pyformat (psycopg) binds by name; qmark (sqlite3) by position
    order: tuple[str, ...]  # bind names in positional order
    binds: tuple[Processor | None, ...]  # bind processors, in ``order``
    record: type[Record] | None
    expanding: tuple[str, ...]  # the ``IN`` lists' bind names
    compiled: SQLCompiler
    fixed: dict[str, Any]  # values bound in the statement itself (literals in a WHERE clause)
    converted: tuple[tuple[int, Processor], ...]  # the result columns that need converting
    expansions: dict[tuple[int, ...], _Expansion] = field(default_factory=dict)  # by list lengths


@dataclass(frozen=True)
class _Expansion:
    """A statement with ``IN`` lists of given lengths, rendered once: its SQL, and for each of its
    parameters the bind it takes its value from (and the list index, for a list's element)."""

    sql: str
    names: tuple[str, ...]
    sources: tuple[tuple[str, int | None, Processor | None], ...]  # (bind, index, processor)


class Sql:
    """One hot statement: Core, compiled once per dialect to the driver's own SQL."""

    __slots__ = ("_by_dialect", "statement")

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._by_dialect: dict[str, _Compiled] = {}

    def compiled(self, dialect: SADialect) -> _Compiled:
        found = self._by_dialect.get(dialect.name)
        if found is None:
            found = self._by_dialect[dialect.name] = _compile(self.statement, dialect)
        return found


def _compile(statement: ClauseElement, dialect: SADialect) -> _Compiled:
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    named = not compiled.positional
    order = tuple(compiled.positiontup or ()) if compiled.positional else tuple(compiled.bind_names.values())
    by_name = {name: bind for bind, name in compiled.bind_names.items()}
    binds = tuple(bind_processor(by_name[name].type, dialect) for name in order)
    columns = compiled._result_columns  # (keyname, name, objects, type) per column
    results = tuple(_result_processor(column[3], dialect) for column in columns)
    record = record_type([column[0] for column in columns]) if columns else None
    expanding = tuple(name for name, bind in by_name.items() if bind.expanding)
    fixed = {name: bind.effective_value for name, bind in by_name.items() if not bind.required}
    converted = tuple((i, p) for i, p in enumerate(results) if p is not None)
    return _Compiled(compiled.string, named, order, binds, record, expanding, compiled, fixed, converted)


def bind_processor(type_: Any, dialect: SADialect) -> Processor | None:
    return type_._cached_bind_processor(dialect)  # type: ignore[no-any-return]


def _result_processor(type_: Any, dialect: SADialect) -> Processor | None:
    try:
        return type_._cached_result_processor(dialect, None)  # type: ignore[no-any-return]
    except TypeError:  # psycopg's numerics want the column's type from the cursor: take them as sent
        return None


def _params(compiled: _Compiled, params: Mapping[str, Any]) -> tuple[str, Any]:
    """The SQL and the driver's parameters for one call."""
    if compiled.fixed:
        params = {**compiled.fixed, **params}
    if compiled.expanding:
        return _expanded(compiled, params)
    out = [params[name] for name in compiled.order]
    for i, process in enumerate(compiled.binds):
        if process is not None and out[i] is not None:
            out[i] = process(out[i])
    if compiled.named:
        return compiled.sql, dict(zip(compiled.order, out, strict=True))
    return compiled.sql, out


def _expanded(compiled: _Compiled, params: Mapping[str, Any]) -> tuple[str, Any]:
    """A statement with ``IN`` lists: rendered by SQLAlchemy once per list lengths, then bound
    here (rendering costs more than SQLite takes to run the statement)."""
    lengths = tuple(len(params[name]) for name in compiled.expanding)
    expansion = compiled.expansions.get(lengths)
    if expansion is None:
        expansion = compiled.expansions[lengths] = _expand(compiled, params)
    values = []
    for name, index, process in expansion.sources:
        value = params[name] if index is None else params[name][index]
        values.append(process(value) if process is not None and value is not None else value)
    if compiled.named:
        return expansion.sql, dict(zip(expansion.names, values, strict=True))
    return expansion.sql, values


def _expand(compiled: _Compiled, params: Mapping[str, Any]) -> _Expansion:
    state = compiled.compiled.construct_expanded_state(dict(params))
    names = tuple(state.positiontup or ()) if not compiled.named else tuple(state.parameters)
    elements = {f"{name}_{i + 1}": (name, i) for name in compiled.expanding for i in range(len(params[name]))}
    sources = []
    for name in names:
        bind, index = (name, None) if name in params and name not in elements else elements[name]
        sources.append((bind, index, state.processors.get(name)))
    return _Expansion(state.statement, names, tuple(sources))


def bound(sql: Sql, dialect: SADialect, params: Mapping[str, Any]) -> tuple[str, Any]:
    """``sql`` as the driver takes it on ``dialect``, with ``params`` bound: (text, parameters)."""
    return _params(sql.compiled(dialect), params)


def _rows(compiled: _Compiled, raw: Iterable[Sequence[Any]]) -> list[Any]:
    record = compiled.record
    if record is None:
        return []
    converted = compiled.converted
    if not converted:
        return [record(row) for row in raw]
    out = []
    for row in raw:
        values = list(row)
        for i, process in converted:
            if values[i] is not None:
                values[i] = process(values[i])
        out.append(record(values))
    return out


def dialect_of(session: AsyncSession) -> SADialect:
    bind = session.bind
    assert bind is not None
    return bind.dialect


class Reader:
    """A read-only SQLite transaction on a plain :mod:`sqlite3` connection, no session around it
    (``Database.reader``): what the hot reads (prepare, the SSE fan-out's journal reads) need, at
    a tenth of a session's cost."""

    __slots__ = ("connection", "database", "dialect")

    def __init__(self, connection: Any, dialect: SADialect, database: Any) -> None:
        self.connection = connection
        self.dialect = dialect
        self.database = database


async def connection_for(session: AsyncSession) -> tuple[Any, dict[str, Any]]:
    """The driver connection of the session's transaction, with the ORM's pending work flushed
    first, so a statement sent on it sees everything the unit wrote before it."""
    if not session.sync_session._is_clean():
        await session.flush()
    return await driver.connection_of(session)


async def execute(
    session: AsyncSession | Reader, sql: Sql, params: Mapping[str, Any] | None = None
) -> list[Any]:
    """Run ``sql`` in the session's transaction; return its rows (an empty list if it has none).

    Pending ORM work is flushed first, so the statement sees everything the unit wrote before it.
    """
    if isinstance(session, Reader):
        compiled = sql.compiled(session.dialect)
        text, values = _params(compiled, params or {})
        return _rows(compiled, await driver.run(session.connection, text, values))
    connection, info = await connection_for(session)
    compiled = sql.compiled(dialect_of(session))
    text, values = _params(compiled, params or {})
    found = await driver.send(connection, info, text, values, rows=compiled.record is not None)
    return _rows(compiled, found)


async def execute_all(
    session: AsyncSession | Reader, statements: Sequence[tuple[Sql, Mapping[str, Any]]]
) -> list[list[Any]]:
    """Run statements that do not depend on each other's results (on PostgreSQL: in one round
    trip); each one's rows, in order."""
    if isinstance(session, Reader):
        return [await execute(session, sql, params) for sql, params in statements]
    connection, info = await connection_for(session)
    dialect = dialect_of(session)
    compiled = [sql.compiled(dialect) for sql, _ in statements]
    texts = [_params(c, params) for c, (_, params) in zip(compiled, statements, strict=True)]
    found = await driver.send_all(connection, info, texts)
    return [_rows(c, rows) for c, rows in zip(compiled, found, strict=True)]


async def hold(session: AsyncSession, sql: Sql, params: Mapping[str, Any] | None = None) -> None:
    """Run ``sql`` in the session's transaction, its rows unread: a row lock (``SELECT … FOR
    UPDATE``) that PostgreSQL takes in the next round trip, in order before the statement that
    needs it (``store.driver``); SQLite runs it at once."""
    connection, info = await connection_for(session)
    text, values = _params(sql.compiled(dialect_of(session)), params or {})
    await driver.send(connection, info, text, values, rows=False)


async def first(session: AsyncSession | Reader, sql: Sql, params: Mapping[str, Any] | None = None) -> Any:
    rows = await execute(session, sql, params)
    return rows[0] if rows else None
