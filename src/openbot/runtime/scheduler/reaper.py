"""The heartbeat for stuck runs: a run still ``running`` past its time limit is reaped.

A lease that is not renewed (its process died or hung) is already taken over by recovery
(``scheduler.recovery``, on every maintenance pass where processes share the database, and at
start). A run whose process is alive but whose agent never finishes — a tool that hangs, a model
call that never returns — keeps its lease renewed, so only a wall-clock limit catches it:
``OPENBOT_RUN_TIME_LIMIT_SECONDS`` (default 15 minutes) after it started, the maintenance pass
fails it with a notice in its thread, fences its worker off, and stops its agent if it runs here.
Its mail is not queued again: the same input would most likely get stuck the same way.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, select

from openbot.core.states import RunStatus
from openbot.runtime.runs.ending import end_run
from openbot.store.models import Run

if TYPE_CHECKING:
    from openbot.runtime.scheduler.system import ActorSystem

_OVERDUE = select(Run).where(Run.status == RunStatus.RUNNING, Run.started_at < bindparam("cutoff"))
_ANY_OVERDUE = (
    select(Run.id).where(Run.status == RunStatus.RUNNING, Run.started_at < bindparam("cutoff")).limit(1)
)


def time_limit_error(limit: float) -> dict[str, str]:
    return {
        "code": "run_time_limit",
        "message": f"the run was still running after its time limit of {limit:g} s and was stopped",
    }


async def reap_overdue(system: ActorSystem) -> list[str]:
    """Fail every run running longer than the limit; returns their ids."""
    limit = system.settings.run_time_limit_seconds
    cutoff = system.clock.now() - timedelta(seconds=limit)
    async with system.db.read() as s:  # the usual answer is no: then no write transaction at all
        if await s.scalar(_ANY_OVERDUE, {"cutoff": cutoff}) is None:
            return []
    async with system.db.transaction() as s:
        stmt = system.db.dialect.for_update(_OVERDUE, skip_locked=True)
        overdue = list(await s.scalars(stmt, {"cutoff": cutoff}))
        for run in overdue:
            await end_run(s, run, RunStatus.FAILED, time_limit_error(limit), system.delivery)
    for run in overdue:
        await system.cancel(run.id)  # its agent, if it runs in this process
    return [run.id for run in overdue]
