"""Run leases: renew ours, and stop working on runs that moved on without us (DESIGN §6).

A lease is (owner, fencing token, expiry). The owner renews it while the run is in flight; a run
cancelled elsewhere, or taken over after its lease expired, is no longer ``running`` under our
token, and its agent task is cancelled here (the fence refuses its late writes anyway).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import or_, select, update

from openbot.core.states import RunStatus
from openbot.store.models import Run

if TYPE_CHECKING:
    from openbot.runtime.scheduler.system import ActorSystem


async def heartbeat(system: ActorSystem) -> list[str]:
    """Renew the leases of our in-flight runs; cancel the ones that moved on. Returns those ids."""
    ours = list(system.alive())
    if not ours:
        return []
    expires = system.clock.now() + timedelta(seconds=system.settings.lease_seconds)
    async with system.db.transaction() as s:
        await s.execute(
            update(Run)
            .where(
                Run.lease_owner == system.owner,
                Run.status == RunStatus.RUNNING,
                Run.id.in_(ours),
                # Never shorten a lease: a slow pass must not undo a later one's renewal.
                or_(Run.lease_expires_at.is_(None), Run.lease_expires_at < expires),
            )
            .values(lease_expires_at=expires)
        )
        gone = list(await s.scalars(select(Run.id).where(Run.id.in_(ours), Run.status != RunStatus.RUNNING)))
    for run_id in gone:
        execution = system.executions.get(run_id)
        if execution is not None:
            execution.cancel()
    return gone
