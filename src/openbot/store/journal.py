"""The event journal and the activity log, both written inside the caller's transaction.

Journal ids are the SSE ids. On PostgreSQL a transaction-scoped advisory lock makes ids commit in
order, so a reader tailing ``id > last`` never skips a row that commits late.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select, text
from sqlalchemy import event as sa_event
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from openbot.store.db import after_commit
from openbot.store.models import ActivityLog, Event, Setting

_JOURNAL_LOCK = 0x0B07
_THREADS = "openbot_journal_threads"
_ACTIVITY = "openbot_activity_rows"


def now() -> datetime:
    return datetime.now(UTC)


async def append_event(
    session: AsyncSession, type_: str, data: dict[str, Any], thread_id: str | None
) -> None:
    """Queue a journal row; it is written at commit, after every other write of the transaction."""
    info = session.sync_session.info
    pending: list[Event] | None = info.get(_THREADS)
    if pending is None:
        pending = info[_THREADS] = []
        database = info.get("database")
        if database is not None:
            after_commit(session, lambda: database.journal_committed(_heads(info.pop(_THREADS, []))))
    pending.append(Event(type=type_, thread_id=thread_id, data=data, created_at=now()))


@sa_event.listens_for(Session, "before_commit")
def _write_journal(session: Session) -> None:
    """Write the queued activity rows, then the journal rows last, under the journal lock on PostgreSQL.

    Taking the lock last means a transaction holding it waits for nothing but its own commit, so
    it can never be part of a lock cycle; holding it through commit makes ids visible in order.
    Both are plain appends, written in as few statements as the backend allows.
    """
    activity: list[ActivityLog] | None = session.info.get(_ACTIVITY)
    pending: list[Event] | None = session.info.get(_THREADS)
    unwritten = [row for row in activity or () if row.id is None]
    if not pending and not unwritten:
        return
    bind = session.get_bind()
    postgresql = bind.dialect.name == "postgresql"
    if unwritten:
        _append_rows(session, unwritten, postgresql)  # no foreign keys, no locks
    if not pending:
        return
    if postgresql:
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _JOURNAL_LOCK})
    _append_rows(session, pending, postgresql)


_CHUNK = 500  # rows per INSERT, well under SQLite's limit on bound parameters


def _append_rows(session: Session, rows: Sequence[Event] | Sequence[ActivityLog], postgresql: bool) -> None:
    """Insert new rows of an autoincrement table and set their ids, in insertion order.

    PostgreSQL: the ORM already batches these (insertmanyvalues). SQLite: the ORM inserts them one
    statement each (it cannot match RETURNING rows to objects), so insert each chunk as one
    multi-row VALUES. SQLite assigns a new rowid larger than any before it, row by row in VALUES
    order, and the writer holds the database lock: the returned ids, sorted, belong to the rows
    in order.
    """
    if postgresql:
        session.add_all(rows)
        session.flush()
        return
    session.flush()  # every other write of the transaction first, as before
    mapper = sa_inspect(type(rows[0]))
    table = mapper.local_table
    key = mapper.primary_key[0]
    fields = [(prop.key, prop.columns[0].key) for prop in mapper.column_attrs if prop.columns[0] is not key]
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        values = [{column: getattr(row, attr) for attr, column in fields} for row in chunk]
        ids = sorted(session.execute(table.insert().values(values).returning(key)).scalars())
        assert len(ids) == len(chunk)
        for row, id_ in zip(chunk, ids, strict=True):
            row.id = id_


def _heads(events: list[Event]) -> dict[str | None, int]:
    """The newest committed journal id per thread of one transaction."""
    heads: dict[str | None, int] = {}
    for event in events:
        heads[event.thread_id] = max(heads.get(event.thread_id, 0), int(event.id or 0))
    return heads


def log_activity(
    session: AsyncSession,
    event: str,
    summary: str,
    *,
    level: str = "info",
    thread_id: str | None = None,
    actor_id: str | None = None,
    actor_handle: str | None = None,
    run_id: str | None = None,
    item_id: str | None = None,
    message_id: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    row = ActivityLog(
        event=event,
        level=level,
        summary=summary,
        thread_id=thread_id,
        actor_id=actor_id,
        actor_handle=actor_handle,
        run_id=run_id,
        item_id=item_id,
        message_id=message_id,
        detail=detail or {},
        created_at=now(),
    )
    # Not added to the session: queued and written at commit with the others (``_write_journal``).
    info = session.sync_session.info
    rows: list[ActivityLog] | None = info.get(_ACTIVITY)
    if rows is None:
        rows = info[_ACTIVITY] = []
        database = info.get("database")
        if database is not None:
            after_commit(session, lambda: database.activity_committed(info.pop(_ACTIVITY, [])))
    rows.append(row)


async def journal_floor(session: AsyncSession) -> int:
    """Ids at or below this were pruned: replaying from before it needs a ``reset``."""
    row = await session.get(Setting, "journal_pruned_through")
    return int(row.value.get("id", 0)) if row else 0


async def prune_journal(session: AsyncSession, older_than: datetime) -> int:
    """Delete journal rows older than the retention period and remember how far we pruned."""
    last = await session.scalar(select(func.max(Event.id)).where(Event.created_at < older_than))
    if not last:
        return 0
    result = await session.execute(delete(Event).where(Event.id <= last))
    row = await session.get(Setting, "journal_pruned_through")
    if row is None:
        session.add(Setting(key="journal_pruned_through", value={"id": int(last)}))
    else:
        row.value = {"id": int(last)}
    return int(getattr(result, "rowcount", 0) or 0)
