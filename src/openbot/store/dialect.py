"""Every difference between SQLite and PostgreSQL, behind one interface.

The runtime never asks which database it is on: it asks the dialect to lock what must be locked,
to append journal rows, and whether other processes may share the database. SQLite serialises
every writer at ``BEGIN IMMEDIATE``, so its locks are no-ops; PostgreSQL takes row locks and a
transaction-scoped advisory lock for the journal.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy import Select, bindparam, event, make_url, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import Session

from openbot.store import driver, fast, inserts
from openbot.store.inline_sqlite import sqlite_of
from openbot.store.memory_index import Fts5Index, LexicalIndex, TsvectorIndex
from openbot.store.message_index import Fts5MessageIndex, MessageIndex, TsvectorMessageIndex
from openbot.store.models import ActivityLog, Actor, Base, Event

S = TypeVar("S", bound=Select[*tuple[Any, ...]])

log = logging.getLogger(__name__)

CHANNEL = "openbot"  # LISTEN/NOTIFY channel: "the journal moved, mail may be waiting"
WOKEN = "openbot_woken"  # session.info: the bots a transaction gave mail to (``db.wake_after_commit``)
TOOK_ONLY = "openbot_took_only"  # session.info: nothing to look for but what it names (claims, finishes)
FREES = "openbot_frees"  # session.info: bots whose mail it may make claimable (``frees_only``)
_JOURNAL_LOCK = 0x0B07
_PAYLOAD_LIMIT = 7900  # PostgreSQL refuses NOTIFY payloads of 8000 bytes or more


class Dialect:
    """The PostgreSQL-free baseline: what SQLite needs (one process, one writer at a time)."""

    name = "sqlite"
    #: Whether other processes may be working on the same database (leases can be taken over).
    shared = False
    #: How memories are ranked by relevance (``store.memory_index``).
    memory_index: LexicalIndex = Fts5Index()
    #: How a thread's messages are searched (``store.message_index``).
    message_index: MessageIndex = Fts5MessageIndex()

    def engine_options(self, url: str, *, writer: bool) -> dict[str, Any]:
        """Statements run inline on the event loop (``store.inline_sqlite``); one writer connection."""
        from openbot.store.inline_sqlite import creator

        path = make_url(url).database or ":memory:"
        pool = {"pool_size": 1, "max_overflow": 0} if writer else {"pool_size": 4, "max_overflow": 4}
        return {"async_creator": creator(path), **pool}

    def configure(self, engine: AsyncEngine, *, writer: bool) -> None:
        _configure_sqlite(engine, immediate=writer)

    async def lock_bot(self, session: AsyncSession, bot_id: str) -> None:
        """Serialise claimers of one bot, so its ceiling holds across processes."""

    async def share_bot(self, session: AsyncSession, bot_id: str) -> None:
        """Keep claims of the bot out until this transaction (a run's finish) ends: a claim that
        finds the bot at its ceiling must see the finish committed, or the finish must see the
        claim's mail (``runs.outcome.finish``). Finishes of one bot do not wait for each other."""

    def for_update(self, stmt: S, *, of: Any = None, skip_locked: bool = False) -> S:
        """Lock the selected rows until commit, where the database has row locks."""
        return stmt

    def write_journal(
        self, session: Session, activity: Sequence[Any], events: Sequence[Any], sender: str
    ) -> None:
        """At commit: the transaction's activity rows, then its journal rows (``store.journal``),
        their ids set. Where other processes share the database, they are told the journal moved
        (``sender`` names this process in the announcement); SQLite has nobody to tell."""
        if activity:
            _append_sqlite(session, ActivityLog, activity)
        if events:
            _append_sqlite(session, Event, events)

    async def listen(self, url: str, heard: Callable[[str], None]) -> None:
        """Call ``heard(sender)`` for every announcement of another transaction, until cancelled.

        One process per database: there is nobody else to hear.
        """

    async def open_checkpointer(self, url: str, stack: AsyncExitStack) -> BaseCheckpointSaver[str]:
        """A ``langgraph.db`` file beside the main database."""
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        database = make_url(url).database or ":memory:"
        path = ":memory:" if database == ":memory:" else str(Path(database).with_suffix(".langgraph.db"))
        conn = await aiosqlite.connect(path)
        stack.push_async_callback(conn.close)
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        return saver


class PostgresDialect(Dialect):
    name = "postgresql"
    shared = True
    memory_index: LexicalIndex = TsvectorIndex()
    message_index: MessageIndex = TsvectorMessageIndex()

    def engine_options(self, url: str, *, writer: bool) -> dict[str, Any]:
        return {"pool_size": 10, "max_overflow": 20, "pool_pre_ping": True}

    def configure(self, engine: AsyncEngine, *, writer: bool) -> None:
        """Writes the fast path holds back (``driver.send_pending``) go before anything else the
        connection sends, and before its commit; a rollback drops them."""
        sync = engine.sync_engine
        event.listen(sync, "before_cursor_execute", lambda conn, *_: driver.send_pending_now(conn))
        event.listen(sync, "commit", driver.commit_now)
        event.listen(sync, "rollback", driver.drop_pending)
        event.listen(sync.pool, "checkin", _forget_held)

    async def lock_bot(self, session: AsyncSession, bot_id: str) -> None:
        # NO KEY UPDATE: serialises claimers of this bot without blocking the foreign-key checks
        # of concurrent posts that enqueue mail for it.
        # Held, so it goes out with the claim's first read (in order: the read sees it locked).
        await fast.hold(session, _LOCK_BOT, {"bot_id": bot_id})

    async def share_bot(self, session: AsyncSession, bot_id: str) -> None:
        # SHARE conflicts with the claim's NO KEY UPDATE, not with itself nor with the foreign-key
        # checks (KEY SHARE) of posts that enqueue mail for the bot.
        await fast.hold(session, _SHARE_BOT, {"bot_id": bot_id})

    def for_update(self, stmt: S, *, of: Any = None, skip_locked: bool = False) -> S:
        return stmt.with_for_update(of=of, skip_locked=skip_locked)

    def write_journal(
        self, session: Session, activity: Sequence[Any], events: Sequence[Any], sender: str
    ) -> None:
        """Journal rows, then activity rows, last and under the lock: every INSERT in one pipeline
        with the writes the fast path holds and the COMMIT itself (``driver.at_commit``: one round
        trip; anything the ORM still flushes goes out before it).

        Taking the journal lock last means a transaction holding it waits for nothing but its own
        commit, so it can never be part of a lock cycle; holding it through commit makes journal
        ids visible in order, so a reader tailing ``id > last`` never skips a row that commits late.
        The activity log is tailed the same way (``after_id``), so its rows are inserted under the
        lock too (a transaction with activity rows but no journal rows takes it on its own).

        Every other transaction that writes the journal waits while this one holds the lock, so it
        is held for one statement and the commit: the statement that inserts the journal rows
        takes the lock first (``_journal_insert``: a materialised CTE that every inserted row is
        joined with, so the lock is granted before the first id is drawn from the sequence) and
        queues the transaction's NOTIFY, delivered at commit: one per transaction (a transaction's
        identical notifications are delivered once, whatever the number of chunks). NOTIFY takes
        a database-wide lock at commit and so serialises committers: never more than one. The
        payload names the sender (a process skips its own announcements) and the bots the
        transaction gave mail to (``announcement``), so a listener wakes them without a query; the
        poll stays the truth.
        """
        session.flush()  # every other write of the transaction first
        connection = session.connection()
        sa_dialect = connection.dialect
        chunks: list[Sequence[Any] | None] = []  # None: a statement whose rows are not ids
        statements: list[tuple[str, Any]] = []
        head = {"key": _JOURNAL_LOCK, "channel": CHANNEL, "payload": announcement_of(session, sender)}
        for start in range(0, len(events), _JOURNAL_CHUNK):
            chunk = events[start : start + _JOURNAL_CHUNK]
            params = dict(head)
            for i, row in enumerate(chunk):
                params.update(
                    {f"t{i}": row.type, f"th{i}": row.thread_id, f"d{i}": row.data, f"c{i}": row.created_at}
                )
            statements.append(fast.bound(_journal_insert(len(chunk)), sa_dialect, params))
            chunks.append(chunk)
        if activity and not events:  # activity ids commit in order too (``GET /activity?after_id=``)
            statements.append(fast.bound(_ACTIVITY_LOCK, sa_dialect, {"key": _JOURNAL_LOCK}))
            chunks.append(None)
        shape = inserts.rows_of(inserts.table_of(ActivityLog), sa_dialect)
        for start in range(0, len(activity), inserts.CHUNK):  # under the lock: it has no foreign keys
            chunk = activity[start : start + inserts.CHUNK]
            values = shape.params(chunk, inserts.attribute)
            statements.append((shape.sql(len(chunk), returning=True), values))
            chunks.append(chunk)

        def took(rows: list[Sequence[Any]]) -> None:
            # Each sequence is drawn in VALUES order (under the lock): sorted ids match.
            for chunk, found in zip(chunks, rows, strict=True):
                if chunk is None:
                    continue
                for row, id_ in zip(chunk, sorted(row[0] for row in found), strict=True):
                    row.id = id_

        driver.at_commit(connection, statements, took)

    async def listen(self, url: str, heard: Callable[[str], None]) -> None:
        """LISTEN on a connection of its own; reconnect after a failure (the poll covers the gap)."""
        import psycopg

        plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(plain, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    async for notice in conn.notifies():
                        heard(notice.payload)
            except psycopg.OperationalError:
                log.warning("lost the LISTEN connection; reconnecting", exc_info=True)
                await asyncio.sleep(1)

    async def open_checkpointer(self, url: str, stack: AsyncExitStack) -> BaseCheckpointSaver[str]:
        """The same database, through a psycopg pool of its own."""
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            plain, min_size=1, max_size=10, open=False, kwargs={"autocommit": True, "row_factory": dict_row}
        )
        await pool.open()
        stack.push_async_callback(pool.close)
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        return saver


def _forget_held(_dbapi: Any, record: Any) -> None:
    """A connection back in the pool keeps nothing a transaction of it held back."""
    record.info.pop(driver.PENDING, None)
    record.info.pop(driver.AT_COMMIT, None)


def announcement_of(session: Session, sender: str) -> str:
    """The ``announcement`` of a transaction about to commit."""
    named = [*(session.info.get(WOKEN) or ()), *(session.info.get(FREES) or ())]
    return announcement(sender, named, took_only=bool(session.info.get(TOOK_ONLY)))


_LOCK_BOT = fast.Sql(select(Actor.id).where(Actor.id == bindparam("bot_id")).with_for_update(key_share=True))
_SHARE_BOT = fast.Sql(select(Actor.id).where(Actor.id == bindparam("bot_id")).with_for_update(read=True))
_JOURNAL_CHUNK = 100  # journal rows per INSERT (a transaction writes a handful)
_ACTIVITY_LOCK = fast.Sql(text("SELECT pg_advisory_xact_lock(:key)"))  # activity rows, no journal rows
_JOURNAL_INSERTS: dict[int, fast.Sql] = {}


def _journal_insert(rows: int) -> fast.Sql:
    """Take the journal lock, queue the NOTIFY and insert ``rows`` journal rows, in one statement
    (built once per row count). The lock is a materialised CTE joined with every row: no row
    reaches the insert, where its id is drawn, before the lock is granted."""
    stmt = _JOURNAL_INSERTS.get(rows)
    if stmt is None:
        values = ", ".join(
            f"(CAST(:t{i} AS VARCHAR), CAST(:th{i} AS VARCHAR), :d{i}, :c{i})" for i in range(rows)
        )
        columns = Event.__table__.c
        stmt = _JOURNAL_INSERTS[rows] = fast.Sql(
            text(
                "WITH journal_lock AS MATERIALIZED"
                " (SELECT pg_advisory_xact_lock(:key), pg_notify(:channel, :payload))"
                " INSERT INTO events (type, thread_id, data, created_at)"
                " SELECT v.type, v.thread_id, v.data, v.created_at"
                f" FROM journal_lock CROSS JOIN (VALUES {values}) AS v (type, thread_id, data, created_at)"
                " RETURNING id"
            ).bindparams(
                *(bindparam(f"d{i}", type_=columns.data.type) for i in range(rows)),
                *(bindparam(f"c{i}", type_=columns.created_at.type) for i in range(rows)),
            )
        )
    return stmt


def announcement(sender: str, woken: Sequence[str], *, took_only: bool = False) -> str:
    """A NOTIFY payload: the sender, then the bots named (given mail, or freed by a finish),
    comma-separated; or ``-`` when the transaction made nothing claimable that it does not name
    (a claim, a finish: ``only_takes_mail``, ``frees_only``); or nothing after the sender (look:
    something may have become claimable, or the bots would not fit)."""
    bots = ",".join(dict.fromkeys(woken))
    if bots and len(sender) + 1 + len(bots) <= _PAYLOAD_LIMIT:
        return f"{sender} {bots}"
    if took_only and not bots:
        return f"{sender} -"
    return sender


def parse_announcement(payload: str) -> tuple[str, list[str], bool]:
    """(sender, bots given mail, whether to look for other claimable mail) of an ``announcement``."""
    sender, _, rest = payload.partition(" ")
    if rest == "-":
        return sender, [], False
    bots = [bot for bot in rest.split(",") if bot]
    return sender, bots, not bots


def only_takes_mail(session: AsyncSession) -> None:
    """Mark a transaction that can only take mail (a claim), never make any claimable: its
    announcement tells listeners there is nothing new to look for."""
    session.sync_session.info[TOOK_ONLY] = True


def frees_only(session: AsyncSession, bot_ids: Sequence[str]) -> None:
    """Mark a transaction after which only the mail of ``bot_ids``, and of the bots it gave mail
    to, can have become claimable (a run's finish: its bot has room again). Its announcement
    names those bots, so other processes wake them instead of looking for work everywhere; with
    none to name it sends nobody looking. Bots named here are not woken in this process (the
    caller's own worker looks again)."""
    info = session.sync_session.info
    info[TOOK_ONLY] = True
    info.setdefault(FREES, []).extend(bot_ids)


def _append_sqlite(session: Session, cls: type[Base], rows: Sequence[Any]) -> None:
    """Insert rows of an autoincrement table (``cls``'s; the rows are plain objects with its
    attributes) in order and set their ids.

    The ORM inserts such rows one statement each on SQLite (it cannot match RETURNING rows to
    objects), so each chunk is one multi-row VALUES, sent as prepared SQL text (no compiling: the
    text is cached per table and row count). SQLite assigns each new rowid larger than any before
    it, in VALUES order, and the writer holds the database lock: the returned ids, sorted, belong
    to the rows in order.
    """
    session.flush()  # every other write of the transaction first
    connection = session.connection()
    shape = inserts.rows_of(inserts.table_of(cls), connection.dialect)
    sqlite = _sqlite(connection.connection.driver_connection)
    for start in range(0, len(rows), inserts.CHUNK):
        chunk = rows[start : start + inserts.CHUNK]
        params = shape.params(chunk, inserts.attribute)
        sql = shape.sql(len(chunk), returning=True)
        ids = sorted(row[0] for row in sqlite.execute(sql, params))
        driver.sent(sql, params)
        for row, id_ in zip(chunk, ids, strict=True):
            row.id = id_


def _sqlite(driver: Any) -> sqlite3.Connection:
    plain = sqlite_of(driver)
    assert plain is not None, "SQLite engines are created on store.inline_sqlite"
    return plain


def dialect_for(url: str) -> Dialect:
    return PostgresDialect() if url.startswith("postgresql") else Dialect()


#: The writer checkpoints its log once it holds this many pages (SQLite's default is 1,000). A
#: checkpoint runs inside the commit that crosses the mark, on the event loop, and copies each page
#: the log holds once: the pages a run rewrites (a thread's row, the tables' last leaves) are
#: copied once per checkpoint however often they were written, so fewer, larger checkpoints copy
#: less in all. Over HTTP, 3–5 % less server CPU a run; the log grows to ~16 MB before it restarts.
WAL_CHECKPOINT_PAGES = 4000


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
        if immediate:
            cursor.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        cursor.close()

    begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        _sqlite(conn.connection.driver_connection).execute(begin)
        driver.sent(begin)
