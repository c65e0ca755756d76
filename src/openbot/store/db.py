"""Engines and sessions for SQLite (embedded default) and PostgreSQL behind one interface.

A session knows its :class:`Database` (``session.info``), and through it the clock and the
dialect: a transaction reads the time with :func:`now` and locks through :func:`dialect`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import Session
from sqlalchemy.util.concurrency import greenlet_spawn

from openbot.core.clock import Clock, SystemClock
from openbot.store.dialect import FREES, TOOK_ONLY, WOKEN, Dialect, dialect_for
from openbot.store.fast import Reader

_AFTER_COMMIT = "openbot_after_commit"
_WOKEN = WOKEN  # bots that got mail in this transaction (the dialect's announcement names them)
_TRANSIENT = (
    "openbot_journal_rows",
    "openbot_activity_rows",
    "openbot_driver",
    "openbot_run_last_seq",
    _WOKEN,
    TOOK_ONLY,
    FREES,
)


def _commit_and_close(session: Session) -> None:
    try:
        session.commit()
    finally:
        session.close()


def _roll_back_and_close(session: Session) -> None:
    """The ORM's rollback, not only the connection's (which ``close`` alone does): objects the
    transaction added go back to transient, changed ones are expired, the rollback events fire."""
    try:
        session.rollback()
    finally:
        session.close()


def normalise_url(url: str) -> str:
    """Accept plain ``postgresql://`` and ``sqlite:///`` URLs and pick the async drivers."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg2"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    elif parsed.drivername == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    return parsed.render_as_string(hide_password=False)


def sync_url(url: str) -> str:
    parsed = make_url(normalise_url(url))
    if parsed.drivername == "sqlite+aiosqlite":
        parsed = parsed.set(drivername="sqlite")
    return parsed.render_as_string(hide_password=False)


class Database:
    """One writer engine, one reader engine, the clock, and the after-commit hooks."""

    def __init__(self, url: str, *, clock: Clock | None = None, echo: bool = False) -> None:
        self.url = normalise_url(url)
        #: This process's name in cross-process announcements (``Dialect.announce``).
        self.instance = os.urandom(6).hex()
        self.clock: Clock = clock or SystemClock()
        self.dialect: Dialect = dialect_for(self.url)
        path = make_url(self.url).database if self.dialect.name == "sqlite" else None
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        options = {"echo": echo, **self.dialect.engine_options(self.url, writer=True)}
        self.engine: AsyncEngine = create_async_engine(self.url, **options)
        self.dialect.configure(self.engine, writer=True)
        self.read_engine: AsyncEngine = self.engine
        if not self.dialect.shared:
            # SQLite reads get their own pool and plain (deferred) transactions: under WAL they
            # never wait for, nor block, the single writer.
            options = {"echo": echo, **self.dialect.engine_options(self.url, writer=False)}
            self.read_engine = create_async_engine(self.url, **options)
            self.dialect.configure(self.read_engine, writer=False)
        info = {"database": self}
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False, info=info)
        self.read_sessions = async_sessionmaker(self.read_engine, expire_on_commit=False, info=info)
        # PostgreSQL's ``reader``: each statement its own transaction. Under READ COMMITTED every
        # statement of a transaction reads its own snapshot anyway; without BEGIN there is no
        # ROLLBACK to send at the end (a round trip).
        self._statement_sessions = (
            async_sessionmaker(
                self.engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False, info=info
            )
            if self.dialect.shared
            else self.read_sessions
        )
        self.journal_listeners: list[Callable[[dict[str | None, int]], None]] = []
        self.activity_listeners: list[Callable[[list[Any]], None]] = []
        self.mail_listeners: list[Callable[[list[str]], None]] = []
        #: Memory relevance by embeddings (``runtime.memory.embeddings``), when configured.
        self.embeddings: Any = None
        self.webhook_listeners: list[Callable[[], None]] = []  # a delivery was recorded
        self.gate_listeners: list[Callable[[], None]] = []  # a tier-2 candidate was recorded
        self._readers: list[sqlite3.Connection] = []  # Database.reader's connections (SQLite)
        # Another connection to an in-memory database would open another database.
        self._memory = not self.dialect.shared and path in (None, "", ":memory:")
        self._idle_readers: list[sqlite3.Connection] = []

    @property
    def backend(self) -> str:
        return self.dialect.name

    def journal_committed(self, heads: dict[str | None, int]) -> None:
        for listener in self.journal_listeners:
            listener(heads)

    def activity_committed(self, rows: list[Any]) -> None:
        for listener in self.activity_listeners:
            listener(rows)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """One session, one transaction: committed on success, rolled back on error."""
        if self.dialect.shared:
            async with self.sessions() as session, session.begin():
                yield session
            return
        # SQLite runs inline (``store.inline_sqlite``): closing the session never suspends, so a
        # cancellation cannot land in the middle of it, and the task and shield the session's own
        # ``__aexit__`` puts around its close (an event-loop turn per transaction) buy nothing.
        # The session begins on its first statement; commit and close share one trip into the
        # synchronous ORM (a greenlet each cost a tenth of a one-statement transaction).
        session = self.sessions()
        try:
            yield session
        except BaseException:
            await greenlet_spawn(_roll_back_and_close, session.sync_session)
            raise
        await greenlet_spawn(_commit_and_close, session.sync_session)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session for reading only: nothing it adds is committed."""
        async with self.read_sessions() as session:
            yield session

    @asynccontextmanager
    async def reader(self) -> AsyncIterator[AsyncSession | Reader]:
        """A read-only transaction for the fast path's reads (``store.fast``): on SQLite a plain
        connection from a small pool of this database's own (WAL: it never waits for the writer);
        on PostgreSQL a session whose statements each commit on their own (autocommit: no
        transaction to end, and each reads a snapshot of its own, as under READ COMMITTED)."""
        if self.dialect.shared:
            async with self._statement_sessions() as session:
                yield session
            return
        if self._memory:
            async with self.read() as session:
                yield session
            return
        connection = self._idle_readers.pop() if self._idle_readers else self._connect_reader()
        connection.execute("BEGIN")
        try:
            yield Reader(connection, self.read_engine.dialect, self)
        finally:
            connection.execute("ROLLBACK")
            self._idle_readers.append(connection)

    def _connect_reader(self) -> sqlite3.Connection:
        path = make_url(self.url).database or ":memory:"
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA busy_timeout=30000")
        self._readers.append(connection)
        return connection

    async def dispose(self) -> None:
        for connection in self._readers:
            connection.close()
        self._readers.clear()
        self._idle_readers.clear()
        await self.engine.dispose()
        if self.read_engine is not self.engine:
            await self.read_engine.dispose()


def is_deadlock(error: BaseException) -> bool:
    """Whether a failed statement was PostgreSQL's deadlock victim (SQLSTATE 40P01): the
    transaction may simply be run again."""
    return getattr(getattr(error, "orig", None), "sqlstate", None) == "40P01"


def database_of(session: AsyncSession | Session) -> Database:
    sync = session.sync_session if isinstance(session, AsyncSession) else session
    database: Database = sync.info["database"]
    return database


def now(session: AsyncSession) -> datetime:
    """The time on the transaction's clock."""
    return database_of(session).clock.now()


def dialect(session: AsyncSession) -> Dialect:
    return database_of(session).dialect


def after_commit(session: AsyncSession, callback: Callable[[], None]) -> None:
    """Run ``callback`` once the session's transaction has committed (never on rollback)."""
    session.sync_session.info.setdefault(_AFTER_COMMIT, []).append(callback)


def wake_after_commit(session: AsyncSession, bot_ids: Iterable[str]) -> None:
    """Tell the mail listeners, once the transaction commits, that these bots have new mail."""
    info = session.sync_session.info
    woken: list[str] | None = info.get(_WOKEN)
    if woken is None:
        woken = info[_WOKEN] = []
        database = database_of(session)

        def _notify() -> None:
            ids = list(dict.fromkeys(info.pop(_WOKEN, [])))
            for listener in database.mail_listeners:
                listener(ids)

        after_commit(session, _notify)
    woken.extend(bot_ids)


@event.listens_for(Session, "after_commit")
def _run_after_commit(session: Session) -> None:
    for callback in session.info.pop(_AFTER_COMMIT, []):
        callback()
    for key in _TRANSIENT:
        session.info.pop(key, None)


@event.listens_for(Session, "after_rollback")
def _drop_after_commit(session: Session) -> None:
    session.info.pop(_AFTER_COMMIT, None)
    for key in _TRANSIENT:
        session.info.pop(key, None)
