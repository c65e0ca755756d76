"""The heartbeat for stuck runs: a run still ``running`` past its time limit is reaped.

A lease that is not renewed (its process died or hung) is already taken over by recovery
(``scheduler.recovery``, on every maintenance pass where processes share the database, and at
start). A run whose process is alive but whose agent never finishes — a tool that hangs, a model
call that never returns — keeps its lease renewed, so only a wall-clock limit catches it:
``OPENBOT_RUN_TIMEOUT_SECONDS`` (default 10 minutes; ``OPENBOT_RUN_TIME_LIMIT_SECONDS`` is the
older name) after it started, or the bot's own ``model_settings.run_timeout_seconds``, the
maintenance pass fails it with a notice in its thread, fences its worker off, and stops its agent
if it runs here. Its mail is not queued again: the same input would most likely get stuck the same
way. This is the one wall-clock bound of a run (invariant 14); it reads the injected clock.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, select

from openbot.core.governor import run_time_limit
from openbot.core.states import RunStatus
from openbot.runtime.runs.ending import end_run
from openbot.store.models import BotProfile, Run

if TYPE_CHECKING:
    from openbot.runtime.scheduler.system import ActorSystem

# Running runs are few (at most the run slots of every process): read them all with their bots'
# settings, and open a write transaction only when one is past its limit.
_RUNNING = (
    select(Run.id, Run.started_at, BotProfile.model_settings)
    .join(BotProfile, BotProfile.actor_id == Run.bot_id)
    .where(Run.status == RunStatus.RUNNING)
)
_OVERDUE = select(Run).where(Run.status == RunStatus.RUNNING, Run.id.in_(bindparam("ids", expanding=True)))


def time_limit_error(limit: float) -> dict[str, str]:
    return {
        "code": "run_time_limit",
        "message": f"the run was still running after its time limit of {limit:g} s and was stopped",
    }


async def reap_overdue(system: ActorSystem) -> list[str]:
    """Fail every run running longer than its limit; returns their ids."""
    stamp = system.clock.now()
    limits: dict[str, float] = {}
    async with system.db.read() as s:  # the usual answer is none: then no write transaction at all
        for run_id, started_at, model_settings in await s.execute(_RUNNING):
            limit = run_time_limit(system.settings.run_time_limit_seconds, model_settings)
            if started_at is not None and started_at < stamp - timedelta(seconds=limit):
                limits[run_id] = limit
    if not limits:
        return []
    async with system.db.transaction() as s:
        stmt = system.db.dialect.for_update(_OVERDUE, skip_locked=True)
        overdue = list(await s.scalars(stmt, {"ids": list(limits)}))
        for run in overdue:
            await end_run(s, run, RunStatus.FAILED, time_limit_error(limits[run.id]), system.delivery)
    for run in overdue:
        await system.cancel(run.id)  # its agent, if it runs in this process
    return [run.id for run in overdue]
