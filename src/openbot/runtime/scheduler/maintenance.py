"""The maintenance pass: leases, take-overs, runs past their time limit, over-full mailboxes, the
backup poll, journal and idempotency-key pruning (DESIGN §6, §7, §10).

The system runs :func:`maintain` every ``poll_seconds`` on its clock; tests call it directly (one
pass) after moving a fake clock, so nothing here waits for real time.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from openbot.runtime import idempotency
from openbot.runtime.governor.overflow import shed_overflow
from openbot.runtime.scheduler.leases import heartbeat
from openbot.runtime.scheduler.reaper import reap_overdue
from openbot.runtime.scheduler.recovery import recover
from openbot.store.journal import prune_journal

if TYPE_CHECKING:
    from openbot.runtime.scheduler.system import ActorSystem

PRUNE_EVERY = timedelta(hours=1)


class Maintenance:
    def __init__(self, system: ActorSystem) -> None:
        self.system = system
        self.next_prune: datetime | None = None
        self._one_at_a_time = asyncio.Lock()  # the loop's pass and a caller's never overlap

    async def maintain(self) -> None:
        """One pass: prune when due, renew leases, take over expired ones, wake bots with mail."""
        async with self._one_at_a_time:
            await self._pass()

    async def _pass(self) -> None:
        system = self.system
        stamp = system.clock.now()
        if self.next_prune is None or stamp >= self.next_prune:
            await self.prune()
            self.next_prune = stamp + PRUNE_EVERY
        await heartbeat(system)
        await reap_overdue(system)
        await shed_overflow(system)
        if system.db.dialect.shared:
            await recover(system, expired_only=True)
        await system.wake_queued()

    async def prune(self) -> int:
        """Drop journal rows past the retention period (SSE clients replaying from there get a reset)
        and idempotency keys older than ``idempotency.KEEP``; return the journal rows dropped."""
        system = self.system
        stamp = system.clock.now()
        cutoff = stamp - timedelta(days=system.settings.journal_retention_days)
        async with system.db.transaction() as s:
            await idempotency.prune(s, stamp - idempotency.KEEP)
            return await prune_journal(s, cutoff)
