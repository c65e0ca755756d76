"""A run's own journal: its status changes and its numbered events, and the lease fence.

Every write a worker makes to a running run goes through :func:`fenced`: the run is locked and
checked against the worker's lease token, so a worker that lost its lease (the run was cancelled,
or another process took it over) can never write to it again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
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
_RUN = Columns(Run, "run_")
_BOT = Columns(Actor, "bot_")
_THREAD = Columns(Thread, "thread_")
# The run locked (FOR UPDATE OF runs on PostgreSQL; SQLite's writer holds the database), with its
# bot and thread, in one read.
_FENCED = fast.Sql(
    select(*_RUN.columns, *_BOT.columns, *_THREAD.columns)
    .join(Actor, Actor.id == Run.bot_id)
    .join(Thread, Thread.id == Run.thread_id)
    .where(Run.id == bindparam("run_id"))
    .with_for_update(of=Run)
)
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
    """Append the run's next event: the seq is computed inside the INSERT (one statement, not two)."""
    stamp = now(session)
    params = {"run_id": run.id, "type": type_, "payload": payload, "created_at": stamp}
    seq = (await fast.execute(session, _ADD_EVENT, params))[0][0]
    # A detached copy of the row for the journal and the caller (the row itself is written).
    event = RunEvent(run_id=run.id, seq=int(seq), type=type_, payload=payload, created_at=stamp)
    append_event(session, "run.event", run_event_view(event, run.thread_id), run.thread_id)
    return event


async def fenced(session: AsyncSession, run_id: str, token: int) -> tuple[Run, Actor, Thread]:
    """Lock the run (with its bot and thread) if this lease still owns it; raise StaleLease if not.

    The run comes back as a detached :class:`Run` (the session does not track it: what the worker
    changes is written by :func:`save`), the bot and thread as read-only records."""
    row = await fast.first(session, _FENCED, {"run_id": run_id})
    if row is None or row.run_status != RunStatus.RUNNING or row.run_lease_token != token:
        raise StaleLease(f"run {run_id} moved on without this worker", {"run_id": run_id})
    return Run(**_RUN.values(row)), _BOT.of(row), _THREAD.of(row)


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
