"""How the fast path's statements reach the database driver (``store.fast`` builds them).

* On SQLite a statement runs synchronously on the :mod:`sqlite3` connection under
  ``store.inline_sqlite``: no thread hop, no greenlet switch.
* On PostgreSQL a write whose result nobody reads (an INSERT or UPDATE without RETURNING, or a
  row lock: ``fast.hold``) is not sent at once: it waits on its connection, with the
  transaction's other such writes, and they go out in order in one psycopg pipeline (one round
  trip) with the next statement that returns rows, or before any statement of the ORM, or before
  the commit (the engine hooks :func:`send_pending_now`, :func:`commit_now` and
  :func:`drop_pending`, installed by ``Dialect.configure``). What the transaction reads, or
  commits, always comes after every write before it. Reads that do not depend on each other go
  out together too (:func:`send_all`). The last writes go out with the COMMIT itself: the
  transaction's final round trip carries its held writes, the statements it writes at commit
  (the journal's: :func:`at_commit`) and the COMMIT, so locks taken late are held for one trip.
* A driver's error is raised as SQLAlchemy raises it (``IntegrityError``, …), on both backends.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session
from sqlalchemy.util.concurrency import greenlet_spawn

from openbot.store.inline_sqlite import sqlite_of

_DRIVER = "openbot_driver"  # session.info: (transaction, driver connection, its info)
PENDING = "openbot_pending"  # Connection.info: writes waiting for the next round trip (PostgreSQL)
AT_COMMIT = "openbot_at_commit"  # Connection.info: statements to send with the COMMIT (``at_commit``)
_IDLE = 0  # psycopg's pq.TransactionStatus.IDLE: no transaction open yet (its BEGIN is still to send)

#: Called with the SQL and parameters of every statement sent to a driver here (the benchmarks
#: count statements with it; SQLAlchemy's own ``before_cursor_execute`` does not see these).
statement_listeners: list[Callable[[str, Any], None]] = []
#: Called with the number of statements each time statements go to a PostgreSQL server in one
#: round trip, COMMIT aside (0: a COMMIT alone); the benchmarks count round trips with it.
trip_listeners: list[Callable[[int], None]] = []


def sent(sql: str, params: Any = ()) -> None:
    """Tell the statement listeners that a statement went to a driver."""
    for listener in statement_listeners:
        listener(sql, params)


async def connection_of(session: AsyncSession) -> tuple[Any, dict[str, Any]]:
    """The driver connection of the session's current transaction (begun here if need be), and
    its ``info``: on SQLite the :mod:`sqlite3` connection under ``store.inline_sqlite``."""
    sync = session.sync_session
    cached = sync.info.get(_DRIVER)
    transaction = sync.get_transaction()
    if cached is not None and transaction is not None and cached[0] is transaction:
        return cached[1], cached[2]
    transaction, raw, info = await greenlet_spawn(_begun, sync)  # one trip into the ORM, not two
    driver = sqlite_of(raw) or raw
    sync.info[_DRIVER] = (transaction, driver, info)
    return driver, info


def _begun(sync: Session) -> tuple[Any, Any, dict[str, Any]]:
    """The session's transaction, begun if need be; its driver connection; the connection's info."""
    connection = sync.connection()
    return sync.get_transaction(), connection.connection.driver_connection, connection.info


async def run(driver: Any, text: str, params: Any) -> Sequence[Sequence[Any]]:
    """One statement on the driver now (a :mod:`sqlite3` connection or psycopg's); its rows."""
    if statement_listeners:
        sent(text, params)
    try:
        if isinstance(driver, sqlite3.Connection):
            cursor = driver.execute(text, params)
            return cursor.fetchall() if cursor.description else ()
        for listener in trip_listeners:
            listener(1)
        acursor = await driver.execute(text, params)  # psycopg
        return await acursor.fetchall() if acursor.description else ()
    except Exception as error:
        raise _as_sqlalchemy(error, text, params) from error


async def send(driver: Any, info: dict[str, Any], text: str, params: Any, *, rows: bool) -> Sequence[Any]:
    """One statement of a session's transaction. On PostgreSQL a write without rows waits for the
    next round trip; a statement with rows takes the waiting writes, and the transaction's BEGIN
    if it is the first, along in one pipeline."""
    if isinstance(driver, sqlite3.Connection):
        return await run(driver, text, params)
    if not rows:
        info.setdefault(PENDING, []).append((text, params))
        return ()
    pending = info.pop(PENDING, None) or []
    if not pending and driver.info.transaction_status != _IDLE:
        return await run(driver, text, params)
    return (await _pipeline(driver, [*pending, (text, params)], wanted=1))[0]


async def send_all(
    driver: Any, info: dict[str, Any], statements: Sequence[tuple[str, Any]]
) -> list[Sequence[Any]]:
    """Several statements of a session's transaction, each returning rows: on PostgreSQL in one
    pipeline with the writes that wait (and the BEGIN); their rows, in order."""
    if isinstance(driver, sqlite3.Connection) or len(statements) == 1:
        return [await send(driver, info, text, params, rows=True) for text, params in statements]
    pending = info.pop(PENDING, None) or []
    return await _pipeline(driver, [*pending, *statements], wanted=len(statements))


async def send_pending(driver: Any, info: dict[str, Any]) -> None:
    """Send the writes waiting on this connection, in order, in one pipeline."""
    pending = info.pop(PENDING, None)
    if pending:
        await _pipeline(driver, pending, wanted=0)


def at_commit(
    connection: Any, statements: Sequence[tuple[str, Any]], took: Callable[[list[Sequence[Any]]], None]
) -> None:
    """PostgreSQL, from a ``before_commit`` hook: send ``statements`` (each returning rows) last,
    after every other write of the transaction, in the COMMIT's own round trip (:func:`commit_now`);
    ``took`` gets their rows once the commit succeeded. Nothing is sent if the transaction rolls
    back instead."""
    connection.info[AT_COMMIT] = (list(statements), took)


def commit_now(connection: Any) -> None:
    """The engine's commit hook: the held writes, the statements queued by :func:`at_commit` and
    the COMMIT, in one pipeline. The driver's own commit that follows finds no transaction open
    and sends nothing. With nothing held or queued, the driver commits as usual."""
    info = connection.info
    queued = info.pop(AT_COMMIT, None)
    pending = info.pop(PENDING, None) or []
    if queued is None and not pending:
        if in_transaction(connection):
            for listener in trip_listeners:  # the driver's own COMMIT, a round trip of its own
                listener(0)
        return
    statements, took = queued or ([], None)
    from sqlalchemy.util import await_only

    raw = connection.connection.driver_connection
    rows = await_only(_pipeline(raw, [*pending, *statements], wanted=len(statements), commit=True))
    if took is not None:
        took(rows)


def in_transaction(connection: Any) -> bool:
    """Whether a SQLAlchemy connection's driver has a transaction open on the server (PostgreSQL):
    a rollback of one that has not (autocommit reads, a transaction that sent nothing) sends
    nothing. The benchmarks count round trips with it."""
    raw = connection.connection.driver_connection
    return bool(raw.info.transaction_status != _IDLE)


def send_pending_now(connection: Any) -> None:
    """The engine hook: before the ORM's own statements, send what waits, from inside
    SQLAlchemy's synchronous code."""
    info = connection.info
    if info.get(PENDING):
        from sqlalchemy.util import await_only

        await_only(send_pending(connection.connection.driver_connection, info))


def drop_pending(connection: Any) -> None:
    """A rollback: what waits was never sent, and never will be. (A connection invalidated under
    an interrupted statement has no ``info`` to read any more; the pool's check-in clears it.)"""
    if not (connection.invalidated or connection.closed):
        connection.info.pop(PENDING, None)
        connection.info.pop(AT_COMMIT, None)


async def _pipeline(
    driver: Any, statements: list[tuple[str, Any]], *, wanted: int, commit: bool = False
) -> list[Sequence[Any]]:
    """``statements`` in one psycopg pipeline (one round trip), followed by the COMMIT if
    ``commit``; the rows of the last ``wanted``."""
    text, params = statements[0] if statements else ("COMMIT", ())
    for listener in trip_listeners:
        listener(len(statements))
    try:
        async with driver.pipeline():
            cursors = []
            for text, params in statements:
                if statement_listeners:
                    sent(text, params)
                cursors.append(await driver.execute(text, params))
            if commit:
                text, params = "COMMIT", ()
                await driver.commit()
            return [await cursor.fetchall() for cursor in cursors[len(cursors) - wanted :]]
    except Exception as error:
        raise _as_sqlalchemy(error, text, params) from error


def _as_sqlalchemy(error: Exception, text: str, params: Any) -> Exception:
    """A driver's error as SQLAlchemy raises it (``IntegrityError``, …), so the fast path fails
    the way the ORM does; anything else as it came."""
    import psycopg
    from sqlalchemy.exc import DBAPIError

    for base in (sqlite3.Error, psycopg.Error):
        if isinstance(error, base):
            return DBAPIError.instance(text, params, error, base)
    return error
