"""SQLite for the async engine without a thread hop per statement.

SQLAlchemy's aiosqlite driver sends every statement to a connection thread and awaits the answer:
~500 µs of queueing and wake-ups around a statement SQLite runs in a few microseconds. This shim
gives SQLAlchemy the same asyncio DBAPI surface (``async_creator``) over a plain :mod:`sqlite3`
connection whose calls finish before they return, so a statement costs what SQLite and the ORM
cost and nothing more.

It is safe because nothing here ever waits for SQLite's lock on the event loop:

* the writer engine has one connection (``Dialect.engine_options``), so a second writer waits for
  the pool asynchronously instead of spinning in ``busy_timeout`` while the first one, which needs
  the loop to finish, holds the lock;
* readers run under WAL, which never makes a reader wait for the writer;
* one process owns a data dir (the server's lock file), so no other process holds the lock.

A statement that reads a lot (a search over a large thread) does run on the loop. That is the
trade-off, recorded in ``docs/decisions.md``: the hot path's statements are indexed point reads
and small writes, where a thread hop costs a hundred times the work.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any


class InlineCursor:
    """The asyncio cursor surface SQLAlchemy's adapter awaits, finishing at once."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    async def execute(self, operation: str, parameters: Any = ()) -> InlineCursor:
        self._cursor.execute(operation, parameters)
        return self

    async def executemany(self, operation: str, seq_of_parameters: Iterable[Any]) -> InlineCursor:
        self._cursor.executemany(operation, seq_of_parameters)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> Sequence[Any]:
        return self._cursor.fetchmany(size if size is not None else self._cursor.arraysize)

    async def fetchall(self) -> Sequence[Any]:
        return self._cursor.fetchall()

    async def setinputsizes(self, *sizes: Any) -> None:
        return None

    async def nextset(self) -> None:
        return None

    async def close(self) -> None:
        self._cursor.close()


class _Immediate:
    """Stands in for aiosqlite's request queue, which SQLAlchemy uses to set ``isolation_level``."""

    def put_nowait(self, request: tuple[asyncio.Future[Any], Callable[[], Any]]) -> None:
        future, function = request
        try:
            future.set_result(function())
        except Exception as error:  # handed to the awaiting caller
            future.set_exception(error)


class InlineConnection:
    """An aiosqlite-shaped connection over :mod:`sqlite3`, used only on the event loop's thread."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._conn = connection
        self._connection: sqlite3.Connection | None = connection  # aiosqlite's "still open" flag
        self._tx = _Immediate()

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    def cursor(self) -> InlineCursor:
        return InlineCursor(self._conn.cursor())

    async def commit(self) -> None:
        self._conn.commit()

    async def rollback(self) -> None:
        self._conn.rollback()

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._conn.create_function(*args, **kwargs)

    async def close(self) -> None:
        self.stop()

    def stop(self) -> None:
        if self._connection is not None:
            self._connection = None
            self._conn.close()


def sqlite_of(driver: Any) -> sqlite3.Connection | None:
    """The :mod:`sqlite3` connection under a driver connection of this shim (None for others)."""
    return driver._conn if isinstance(driver, InlineConnection) else None


def creator(path: str, *, timeout: float = 30.0) -> Callable[[], Any]:
    """The ``async_creator`` for an engine on ``path``."""

    async def connect() -> InlineConnection:
        connection = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        return InlineConnection(connection)

    return connect
