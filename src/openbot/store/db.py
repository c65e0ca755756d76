"""Engines and sessions for SQLite (embedded default) and PostgreSQL behind one interface."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import Session

AFTER_COMMIT = "openbot_after_commit"
THREADS_LOCKED = "openbot_threads_locked"  # threads whose row this transaction has locked


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
    """One engine, one session factory, and the after-commit hooks that wake the runtime."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = normalise_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        kwargs: dict[str, Any] = {"echo": echo}
        if self.is_sqlite:
            path = make_url(self.url).database
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": 30}
        else:
            kwargs.update(pool_size=10, max_overflow=20, pool_pre_ping=True)
        self.engine: AsyncEngine = create_async_engine(self.url, **kwargs)
        self.read_engine: AsyncEngine = self.engine
        if self.is_sqlite:
            _configure_sqlite(self.engine, immediate=True)
            # Reads get their own pool and plain (deferred) transactions: under WAL they never
            # wait for, nor block, the single writer.
            self.read_engine = create_async_engine(self.url, **kwargs)
            _configure_sqlite(self.read_engine, immediate=False)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False, info={"database": self})
        self.read_sessions = async_sessionmaker(
            self.read_engine, expire_on_commit=False, info={"database": self}
        )
        self.journal_listeners: list[Callable[[dict[str | None, int]], None]] = []
        self.activity_listeners: list[Callable[[list[Any]], None]] = []

    def activity_committed(self, rows: list[Any]) -> None:
        for listener in self.activity_listeners:
            listener(rows)

    def journal_committed(self, heads: dict[str | None, int]) -> None:
        for listener in self.journal_listeners:
            listener(heads)

    @property
    def backend(self) -> str:
        return "sqlite" if self.is_sqlite else "postgresql"

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """One session, one transaction: committed on success, rolled back on error."""
        async with self.sessions() as session, session.begin():
            yield session

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session for reading only: nothing it adds is committed."""
        async with self.read_sessions() as session:
            yield session

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self.read_engine is not self.engine:
            await self.read_engine.dispose()


def after_commit(session: AsyncSession, callback: Callable[[], None]) -> None:
    """Run ``callback`` once the session's transaction has committed (never on rollback)."""
    session.sync_session.info.setdefault(AFTER_COMMIT, []).append(callback)


@event.listens_for(Session, "after_commit")
def _run_after_commit(session: Session) -> None:
    session.info.pop(THREADS_LOCKED, None)
    for callback in session.info.pop(AFTER_COMMIT, []):
        callback()
    session.info.pop("openbot_journal_threads", None)
    session.info.pop("openbot_activity_rows", None)


@event.listens_for(Session, "after_rollback")
def _drop_after_commit(session: Session) -> None:
    session.info.pop("openbot_journal_threads", None)
    session.info.pop("openbot_activity_rows", None)
    session.info.pop(THREADS_LOCKED, None)
    session.info.pop(AFTER_COMMIT, None)


def _configure_sqlite(engine: AsyncEngine, *, immediate: bool) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take control of transactions so every write transaction starts IMMEDIATE: SQLite then
        # serialises writers at BEGIN instead of failing one of them at its first write.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
