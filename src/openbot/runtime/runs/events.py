"""A run's own journal: its status changes and its numbered events, and the lease fence.

Every write a worker makes to a running run goes through :func:`fenced`: the run is locked and
checked against the worker's lease token, so a worker that lost its lease (the run was cancelled,
or another process took it over) can never write to it again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import StaleLease
from openbot.core.states import RunStatus, check
from openbot.runtime.views import run_event_view, run_view
from openbot.store import fast
from openbot.store.columns import Columns
from openbot.store.db import now
from openbot.store.journal import append_event, log_activity
from openbot.store.models import Actor, Run, RunEvent, Thread

# Built once; a call binds its values (building a statement costs more than SQLite takes to run it).
_ADD_EVENT = fast.Sql(
    insert(RunEvent)
    .values(
        run_id=bindparam("run_id"),
        seq=select(func.coalesce(func.max(RunEvent.seq), 0) + 1)
        .where(RunEvent.run_id == bindparam("run_id"))
        .scalar_subquery(),
        type=bindparam("type"),
        payload=bindparam("payload", type_=RunEvent.payload.type),
        created_at=bindparam("created_at", type_=RunEvent.created_at.type),
    )
    .returning(RunEvent.seq)
)
# The same with the number given (``fenced(numbered=True)``): nothing to read back.
_ADD_NUMBERED_EVENT = fast.Sql(
    insert(RunEvent).values(
        run_id=bindparam("run_id"),
        seq=bindparam("seq"),
        type=bindparam("type"),
        payload=bindparam("payload", type_=RunEvent.payload.type),
        created_at=bindparam("created_at", type_=RunEvent.created_at.type),
    )
)
_LAST_SEQ = "openbot_run_last_seq"  # session.info: {run id: its last event's seq} (``fenced``)
_RUN = Columns(Run, "run_")
_BOT = Columns(Actor, "bot_")
_THREAD = Columns(Thread, "thread_")


def fence_statement(*extra: ColumnElement[Any], numbered: bool = False) -> fast.Sql:
    """The fence's read (:func:`fenced_with`): the run locked (FOR UPDATE OF runs on PostgreSQL;
    SQLite's writer holds the database), with its bot and thread, the ``extra`` columns (which may
    refer to ``Run``'s) and, if ``numbered``, the number of its last event, in one statement."""
    last_seq = (
        select(func.coalesce(func.max(RunEvent.seq), 0))
        .where(RunEvent.run_id == Run.id)
        .scalar_subquery()
        .label("last_seq")
    )
    return fast.Sql(
        select(*_RUN.columns, *_BOT.columns, *_THREAD.columns, *extra, *([last_seq] if numbered else []))
        .join(Actor, Actor.id == Run.bot_id)
        .join(Thread, Thread.id == Run.thread_id)
        .where(Run.id == bindparam("run_id"))
        .with_for_update(of=Run)
    )


_FENCED = fence_statement()
# What a worker changes on its run, written back in one statement (``save``).
_SAVE = fast.Sql(
    update(Run)
    .where(Run.id == bindparam("run_id"))
    .values(
        {
            Run.status: bindparam("status"),
            Run.interrupt: bindparam("interrupt", type_=Run.interrupt.type),
            Run.error: bindparam("error", type_=Run.error.type),
            Run.input_tokens: bindparam("input_tokens"),
            Run.output_tokens: bindparam("output_tokens"),
            Run.model_calls: bindparam("model_calls"),
            Run.finished_at: bindparam("finished_at", type_=Run.finished_at.type),
        }
    )
)


def journal_run(session: AsyncSession, run: Run, bot_handle: str) -> None:
    append_event(session, "run.updated", run_view(run, bot_handle), run.thread_id)


def log_run(
    session: AsyncSession,
    event: str,
    summary: str,
    run: Run,
    bot: Actor,
    *,
    level: str = "info",
    detail: dict[str, Any] | None = None,
) -> None:
    """An activity row about a run of ``bot`` (its thread, bot and run filled in)."""
    log_activity(
        session,
        event,
        summary,
        level=level,
        thread_id=run.thread_id,
        actor_id=bot.id,
        actor_handle=bot.handle,
        run_id=run.id,
        detail=detail,
    )


def move(run: Run, target: RunStatus) -> None:
    """Change a run's status, if its state machine allows it (core.states)."""
    run.status = check(RunStatus, run.status, target)


async def add_run_event(session: AsyncSession, run: Run, type_: str, payload: dict[str, Any]) -> RunEvent:
    """Append the run's next event. Its number is the one after the last that ``fenced(numbered=
    True)`` read in this transaction, when it did (the INSERT then returns nothing, and on
    PostgreSQL waits to go out with the next round trip); otherwise it is computed inside the
    INSERT and read back (one statement, not two)."""
    stamp = now(session)
    params: dict[str, Any] = {"run_id": run.id, "type": type_, "payload": payload, "created_at": stamp}
    numbered: dict[str, int] | None = session.sync_session.info.get(_LAST_SEQ)
    if numbered is not None and run.id in numbered:
        seq = params["seq"] = numbered[run.id] + 1
        numbered[run.id] = seq
        await fast.execute(session, _ADD_NUMBERED_EVENT, params)
    else:
        seq = (await fast.execute(session, _ADD_EVENT, params))[0][0]
    # A detached copy of the row for the journal and the caller (the row itself is written).
    event = RunEvent(run_id=run.id, seq=int(seq), type=type_, payload=payload, created_at=stamp)
    append_event(session, "run.event", run_event_view(event, run.thread_id), run.thread_id)
    return event


async def fenced(session: AsyncSession, run_id: str, token: int) -> tuple[Run, Actor, Thread]:
    """Lock the run (with its bot and thread) if this lease still owns it; raise StaleLease if not
    (:func:`fenced_with`, reading nothing more)."""
    run, bot, thread, _row = await fenced_with(session, _FENCED, run_id, token)
    return run, bot, thread


async def fenced_with(
    session: AsyncSession, statement: fast.Sql, run_id: str, token: int, *, numbered: bool = False
) -> tuple[Run, Actor, Thread, fast.Record]:
    """Lock the run (with its bot and thread) if this lease still owns it; raise StaleLease if not.

    The run comes back as a detached :class:`Run` (the session does not track it: what the worker
    changes is written by :func:`save`), the bot and thread as read-only records, and the row
    ``statement`` (a :func:`fence_statement`) read, for its extra columns.

    ``numbered`` (with a statement built ``numbered``): the caller is the only one appending
    events to the run until this transaction ends (a finish: the agent is done), so the events it
    adds are numbered from the last one read here and never read back. Not for appenders that may
    overlap (a run's tools record events while others run): on PostgreSQL a fence that waited for
    another's lock read the number as it was before the other committed."""
    row = await fast.first(session, statement, {"run_id": run_id})
    if row is None or row.run_status != RunStatus.RUNNING or row.run_lease_token != token:
        raise StaleLease(f"run {run_id} moved on without this worker", {"run_id": run_id})
    if numbered:
        session.sync_session.info.setdefault(_LAST_SEQ, {})[run_id] = int(row.last_seq)
    return Run(**_RUN.values(row)), _BOT.of(row), _THREAD.of(row), row


async def save(session: AsyncSession, run: Run) -> None:
    """Write what a worker changed on its fenced run: status, interrupt, error, usage, finish time."""
    await fast.execute(
        session,
        _SAVE,
        {
            "run_id": run.id,
            "status": run.status,
            "interrupt": run.interrupt,
            "error": run.error,
            "input_tokens": run.input_tokens,
            "output_tokens": run.output_tokens,
            "model_calls": run.model_calls,
            "finished_at": run.finished_at,
        },
    )
