"""The event journal and the activity log, both written inside the caller's transaction.

Journal ids are the SSE ids. Rows are queued while the transaction runs and written at commit,
journal and activity, through the dialect (on PostgreSQL under a transaction-scoped
advisory lock, so ids commit in order and a reader tailing ``id > last`` never skips a row that
commits late).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy import event as sa_event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from openbot.store import fast, inserts
from openbot.store.db import after_commit, database_of, now
from openbot.store.models import Event, Setting

_JOURNAL = "openbot_journal_rows"
_ACTIVITY = "openbot_activity_rows"


@dataclass(slots=True)
class JournalRow:
    """A journal (``events``) row, queued in a transaction and written at its commit. A plain
    object, not an ORM one: a run queues a dozen, and building ORM objects costs more than
    writing them."""

    type: str
    thread_id: str | None
    data: dict[str, Any]
    created_at: datetime
    id: int | None = None


@dataclass(slots=True)
class ActivityRow:
    """An ``activity_log`` row, queued like :class:`JournalRow`."""

    event: str
    level: str
    summary: str
    thread_id: str | None
    actor_id: str | None
    actor_handle: str | None
    run_id: str | None
    item_id: str | None
    message_id: str | None
    detail: dict[str, Any]
    created_at: datetime
    id: int | None = None


def append_event(session: AsyncSession, type_: str, data: Mapping[str, Any], thread_id: str | None) -> None:
    """Queue a journal row; it is written at commit, after every other write of the transaction."""
    info = session.sync_session.info
    pending: list[JournalRow] | None = info.get(_JOURNAL)
    if pending is None:
        pending = info[_JOURNAL] = []
        database = database_of(session)
        after_commit(session, lambda: database.journal_committed(_heads(info.pop(_JOURNAL, []))))
    pending.append(JournalRow(type_, thread_id, dict(data), now(session)))


@sa_event.listens_for(Session, "before_commit")
def _write_journal(session: Session) -> None:
    """Write the queued activity rows, then the journal rows last (see the module docstring)."""
    if "database" not in session.info:
        return
    activity: list[ActivityRow] = [row for row in session.info.get(_ACTIVITY) or () if row.id is None]
    pending: list[JournalRow] = session.info.get(_JOURNAL) or []
    if activity or pending:
        database = database_of(session)
        database.dialect.write_journal(session, activity, pending, database.instance)


def _heads(events: list[JournalRow]) -> dict[str | None, int]:
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
    """Queue an activity row; written at commit with the journal (``_write_journal``)."""
    row = ActivityRow(
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
        created_at=now(session),
    )
    info = session.sync_session.info
    rows: list[ActivityRow] | None = info.get(_ACTIVITY)
    if rows is None:
        rows = info[_ACTIVITY] = []
        database = database_of(session)
        after_commit(session, lambda: database.activity_committed(info.pop(_ACTIVITY, [])))
    rows.append(row)


async def journal_head(session: AsyncSession) -> int:
    return int(await session.scalar(select(func.coalesce(func.max(Event.id), 0))) or 0)


async def journal_floor(session: AsyncSession) -> int:
    """Ids at or below this were pruned: replaying from before it needs a ``reset``."""
    row = await session.get(Setting, "journal_pruned_through")
    return int(row.value.get("id", 0)) if row else 0


def _reader(*, bounded: bool, one_thread: bool) -> fast.Sql:
    stmt = select(*inserts.table_of(Event).columns).where(Event.id > bindparam("after"))
    if bounded:
        stmt = stmt.where(Event.id <= bindparam("upto"))
    if one_thread:
        stmt = stmt.where(Event.thread_id == bindparam("thread_id"))
    return fast.Sql(stmt.order_by(Event.id).limit(bindparam("limit")))


# Every SSE stream reads here after each commit: built once, run on the driver.
_READERS = {(b, t): _reader(bounded=b, one_thread=t) for b in (False, True) for t in (False, True)}


async def read_journal(
    session: AsyncSession | fast.Reader, thread_id: str | None, after: int, upto: int | None, limit: int
) -> list[Event]:
    """Journal rows after ``after`` (up to ``upto``), oldest first: read-only records with the
    Event's attributes."""
    params: dict[str, Any] = {"after": after, "upto": upto, "thread_id": thread_id, "limit": limit}
    return await fast.execute(session, _READERS[upto is not None, bool(thread_id)], params)


async def prune_journal(session: AsyncSession, older_than: datetime) -> int:
    """Delete journal rows older than the retention period and remember how far we pruned.

    The newest row always stays, however old: SQLite numbers a new row one past the largest id in
    the table, so an emptied journal would hand out ids from 1 again, and a client resuming from
    its last id would wait, blind, until the new ids passed it."""
    newest = select(func.max(Event.id)).scalar_subquery()
    last = await session.scalar(
        select(func.max(Event.id)).where(Event.created_at < older_than, Event.id < newest)
    )
    if not last:
        return 0
    result = await session.execute(delete(Event).where(Event.id <= last))
    row = await session.get(Setting, "journal_pruned_through")
    if row is None:
        session.add(Setting(key="journal_pruned_through", value={"id": int(last)}))
    else:
        row.value = {"id": int(last)}
    return int(getattr(result, "rowcount", 0) or 0)
