"""Recovery: fail the in-flight runs nobody owns any more, re-queue their mail (invariant 12).
A run cut off while it resumed waits for its answer again, which is applied again.

With one process per database (SQLite) every queued or running run found at start is orphaned.
Where other processes may be alive (PostgreSQL) a run is taken over when its lease expired, and at
start also when its lease names this process's node (``scheduler.node``): one live process per
name, so the process that held it is gone.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.scheduling import ItemKind
from openbot.core.states import IN_FLIGHT_RUNS, ItemStatus, RunStatus
from openbot.runtime.delivery.holds import release_all
from openbot.runtime.runs.ending import end_run, resume_again
from openbot.store.journal import log_activity
from openbot.store.models import InboxItem, Run

if TYPE_CHECKING:
    from openbot.runtime.scheduler.system import ActorSystem

RESTARTED = "the server restarted while this run was in flight"
TAKEN_OVER = (
    "its lease expired: the process running it (node {owner}) stopped renewing it, and the run was taken over"
)
STOPPED = "the process running it (node {owner}) stopped before the run finished: its drain time was up"


def cause(run: Run, owner: str, *, expired_only: bool, ours: bool) -> str:
    """Why an orphaned run stopped: this process's own restart (every run at a start on SQLite,
    this node's runs at a start on PostgreSQL), or a process that stopped renewing its lease."""
    if not expired_only or (ours and run.lease_owner == owner):
        return RESTARTED
    return TAKEN_OVER.format(owner=run.lease_owner or "unknown")


async def recover(system: ActorSystem, *, expired_only: bool, ours: bool = False) -> int:
    """Take over orphaned runs and release held hand-offs; returns how many runs were recovered.

    ``expired_only``: only runs whose lease expired (other processes may be alive); with ``ours``
    also the runs leased to this node, whatever their expiry (at start, before it claims any).
    """
    stamp = system.clock.now()
    alive = system.alive()  # never ours to take over, whatever their leases say
    async with system.db.transaction() as s:
        stmt = select(Run).where(Run.status.in_(IN_FLIGHT_RUNS))
        if expired_only:
            lapsed = Run.lease_expires_at < stamp
            stmt = stmt.where(or_(lapsed, Run.lease_owner == system.owner) if ours else lapsed)
        if alive:
            stmt = stmt.where(Run.id.not_in(alive))
        orphans = list(await s.scalars(system.db.dialect.for_update(stmt, skip_locked=True)))
        resumed: set[str] = set()
        for run in orphans:
            why = cause(run, system.owner, expired_only=expired_only, ours=ours)
            if await _interrupt(s, system, run, why):
                resumed.add(run.id)
        if not expired_only:
            # Mail claimed by nobody (a crash between claim and run row) goes back to the queue.
            await s.execute(
                update(InboxItem)
                .where(InboxItem.status == ItemStatus.PROCESSING, InboxItem.kind == ItemKind.MESSAGE)
                .values(status=ItemStatus.QUEUED, claimed_by_run=None, updated_at=stamp)
            )
        await release_all(s)
        if orphans:
            log_activity(
                s,
                "system.recovered",
                f"recovered {len(orphans)} run(s) left in flight",
                level="warning",
                detail={"runs": [r.id for r in orphans]},
            )
    for run in orphans:
        if run.id not in resumed:
            await system.runner.forget(run.id)
    return len(orphans)


async def hand_back(system: ActorSystem, run_ids: Collection[str]) -> int:
    """At a stop, once the drain time is up and the runs' agents are stopped: end the runs this
    process still held as recovery would, so another process takes them over now rather than when
    their leases lapse (DRAIN_SECONDS: how long runs may finish before they are cancelled)."""
    if not run_ids:
        return 0
    why = STOPPED.format(owner=system.owner)
    async with system.db.transaction() as s:
        stmt = select(Run).where(
            Run.id.in_(run_ids), Run.status.in_(IN_FLIGHT_RUNS), Run.lease_owner == system.owner
        )
        runs = list(await s.scalars(system.db.dialect.for_update(stmt)))
        resumed = {run.id for run in runs if await _interrupt(s, system, run, why)}
    for run in runs:
        if run.id not in resumed:
            await system.runner.forget(run.id)
    return len(runs)


async def _interrupt(s: AsyncSession, system: ActorSystem, run: Run, why: str) -> bool:
    """End a run cut off in flight: failed ``interrupted``, its mail queued again. A run cut off
    while it resumed waits for its answer again instead (its durable checkpoint is kept): True."""
    attempts = system.settings.max_item_attempts
    if await resume_again(s, run, system.delivery, max_attempts=attempts, why=why):
        return True
    await end_run(
        s,
        run,
        RunStatus.FAILED,
        {"code": "interrupted", "message": why},
        system.delivery,
        requeue_items=True,
        max_attempts=attempts,
    )
    return False
