"""Firing an automation: one transaction that records the occurrence, posts, and moves the schedule.

The occurrence row is inserted (and flushed) before the message, in the same transaction: a crash
between the two loses both, so the next pass fires again; a commit has both. Two processes cannot
both fire one scheduled time: the automation row is locked (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL; SQLite has one writer) and re-read as due under the lock, and the unique index on
(automation, scheduled time) refuses a second row whatever happens.

A firing posts ``content`` as the owner, addressed to the bot, into the automation's thread or a
new one. A ``heartbeat`` automation posts into each thread where the bot has unfinished todos.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core import cron
from openbot.core.errors import NotFound
from openbot.core.ids import new_id
from openbot.runtime import threads
from openbot.runtime.automations.definitions import schedule_of
from openbot.runtime.automations.views import occurrence_view
from openbot.runtime.commands import ThreadCreate
from openbot.runtime.delivery.post import Delivery
from openbot.store.db import dialect
from openbot.store.journal import append_event, log_activity
from openbot.store.models import Actor, Automation, AutomationOccurrence, Thread, TodoList

HEARTBEAT_THREADS = 20  # at most this many threads woken by one heartbeat


class Occurred(StrEnum):
    FIRED = "fired"
    CAUGHT_UP = "caught_up"
    SKIPPED = "skipped"
    FAILED = "failed"


class _Unpostable(Exception):
    """The firing cannot post (its bot, owner or thread is gone): recorded as a failed occurrence."""


async def fire(
    session: AsyncSession, delivery: Delivery, automation_id: str, stamp: datetime, *, manual: bool = False
) -> AutomationOccurrence | None:
    """Fire the automation if it is due at ``stamp`` (``manual``: now, whatever its schedule).

    Returns the occurrence, or None when nothing was due (another process fired it first)."""
    stmt = select(Automation).where(Automation.id == automation_id)
    if not manual:
        stmt = stmt.where(Automation.enabled.is_(True), Automation.next_run_at <= stamp)
    row = await session.scalar(dialect(session).for_update(stmt, skip_locked=not manual))
    if row is None:
        if manual:
            raise NotFound(f"automation {automation_id} not found", {"automation_id": automation_id})
        return None
    scheduled_for, status = stamp, Occurred.FIRED
    if not manual:
        due = cron.plan_due(schedule_of(row), row.next_run_at, stamp) if row.next_run_at else None
        if due is None:
            return None
        scheduled_for = due.scheduled_for
        if due.missed:
            status = Occurred.CAUGHT_UP if row.catch_up == "once" else Occurred.SKIPPED
        row.next_run_at = due.next_run_at
        if due.next_run_at is None:  # a one-shot is done: the definition changes
            row.enabled, row.updated_at = False, stamp
    occurrence = AutomationOccurrence(
        id=new_id("occ"), automation_id=row.id, scheduled_for=scheduled_for, status=status, fired_at=stamp
    )
    session.add(occurrence)
    await session.flush()  # the unique index refuses a second firing of this time here
    if status != Occurred.SKIPPED:
        row.last_run_at = stamp
        try:
            occurrence.thread_id, occurrence.message_id = await _post(session, delivery, row)
        except _Unpostable as exc:  # it would fail the same way every time: stop until changed
            occurrence.status = Occurred.FAILED
            occurrence.error = {"code": "not_found", "message": f"{exc}; the automation is disabled"}
            row.enabled, row.next_run_at, row.updated_at = False, None, stamp
    _record(session, row, occurrence)
    return occurrence


def record_failure(session: AsyncSession, row: Automation, stamp: datetime, error: dict[str, Any]) -> None:
    """After a firing's transaction broke: a failed occurrence, and the schedule moves on."""
    due = cron.plan_due(schedule_of(row), row.next_run_at or stamp, stamp)
    scheduled_for = due.scheduled_for if due else stamp
    row.next_run_at = due.next_run_at if due else row.next_run_at
    if row.next_run_at is None and row.enabled:
        row.enabled, row.updated_at = False, stamp
    occurrence = AutomationOccurrence(
        id=new_id("occ"),
        automation_id=row.id,
        scheduled_for=scheduled_for,
        status=Occurred.FAILED,
        error=error,
        fired_at=stamp,
    )
    session.add(occurrence)
    _record(session, row, occurrence)


async def _post(session: AsyncSession, delivery: Delivery, row: Automation) -> tuple[str | None, str | None]:
    """Post the firing's message(s); returns the (first) thread and message."""
    bot, owner = await session.get(Actor, row.bot_id), await session.get(Actor, row.owner_id)
    if bot is None or bot.deleted:
        raise _Unpostable("the automation's bot was deleted")
    if owner is None or owner.deleted:
        raise _Unpostable("the automation's owner was deleted")
    metadata = {"kind": "automation", "automation_id": row.id}
    targets = await _threads(session, row, bot, owner)
    first: tuple[str | None, str | None] = (None, None)
    for thread in targets:
        result = await delivery.post(
            session, thread, row.content, sender=owner, to=[bot.handle], metadata=metadata
        )
        if first == (None, None):
            first = (thread.id, result.message.id)
    return first


async def _threads(session: AsyncSession, row: Automation, bot: Actor, owner: Actor) -> list[Thread]:
    if row.thread_id is not None:
        thread = await session.get(Thread, row.thread_id)
        if thread is None:
            raise _Unpostable(f"thread {row.thread_id} was deleted")
        return [thread]
    if row.kind == "heartbeat":
        return await _open_threads(session, bot)
    title = row.title or f"Automation: {row.content[:60]}"
    command = ThreadCreate(title=title[:500], participants=list(dict.fromkeys([owner.handle, bot.handle])))
    return [await threads.create_thread(session, command)]


async def _open_threads(session: AsyncSession, bot: Actor) -> list[Thread]:
    """The threads where the bot has todos that are not completed (what a heartbeat reviews)."""
    rows = await session.execute(
        select(Thread, TodoList.todos)
        .join(TodoList, TodoList.thread_id == Thread.id)
        .where(TodoList.bot_id == bot.id)
        .order_by(Thread.last_message_at.desc().nulls_last(), Thread.id)
    )
    open_ = [t for t, todos in rows if any(dict(x).get("status") != "completed" for x in todos or [])]
    return open_[:HEARTBEAT_THREADS]


def _record(session: AsyncSession, row: Automation, occurrence: AutomationOccurrence) -> None:
    view = occurrence_view(occurrence)
    append_event(session, "automation.fired", dict(view), occurrence.thread_id)
    level = "warning" if occurrence.status in (Occurred.FAILED, Occurred.SKIPPED) else "info"
    log_activity(
        session,
        f"automation.{occurrence.status}",
        f"automation {row.title or row.id}: {occurrence.status} (scheduled for "
        f"{occurrence.scheduled_for.isoformat()})",
        level=level,
        thread_id=occurrence.thread_id,
        actor_id=row.bot_id,
        message_id=occurrence.message_id,
        detail={"automation_id": row.id, "occurrence_id": occurrence.id, "error": occurrence.error},
    )
