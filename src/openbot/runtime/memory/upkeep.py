"""Memory upkeep: the loop that reflects, decays and consolidates, and the on-demand doors to it
(DESIGN §8).

Every ``poll_seconds`` on the runtime's clock one pass (:meth:`MemoryUpkeep.step`):

- reflects on every due pending reflection (``memory.reflection``);
- every ``MEMORY_MAINTENANCE_INTERVAL`` (default hourly) runs decay for every bot with memory;
- every ``MEMORY_CONSOLIDATION_INTERVAL`` (default daily) consolidates every bot with memory.

When maintenance and consolidation last ran is kept in the ``settings`` table (``memory_upkeep``),
taken under a row lock before running, so a restart does not postpone them and two processes on
one PostgreSQL database do not both run them. The loop has its own task (the runtime owns it) and
never holds up runs: reflection is not part of any run. ``maintain`` and ``consolidate`` are the
API's ``POST /bots/{handle}/memories/maintain|consolidate``. Tests call :meth:`step` after moving
a fake clock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

from sqlalchemy import select

from openbot.config import Settings
from openbot.runtime.loops import background, stop_if_cancelled
from openbot.runtime.memory import consolidation, decay, embeddings, store
from openbot.runtime.memory.consolidation import DecisionView
from openbot.runtime.memory.decay import MaintainView
from openbot.runtime.memory.reflection import Reflector
from openbot.runtime.team import get_bot
from openbot.store.db import Database, dialect, now
from openbot.store.models import Actor, BotProfile, Setting

log = logging.getLogger(__name__)

_KEY = "memory_upkeep"


class MemoryUpkeep:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.clock = db.clock
        self.settings = settings
        self.reflector = Reflector(db, settings)
        self._look_again: datetime | None = None  # no scheduled job can be due before then
        self._one_at_a_time = asyncio.Lock()  # the loop's pass and a test's never overlap

    # ── on demand ────────────────────────────────────────────────────────────────────────────
    async def maintain(self, handle: str) -> MaintainView:
        """Decay the bot's memories now (raises NotFound for an unknown bot)."""
        async with self.db.transaction() as s:
            bot, _profile = await get_bot(s, handle)
            return await decay.maintain(s, store.BotRef(bot.id, bot.handle))

    async def consolidate(self, handle: str) -> list[DecisionView]:
        """Consolidate the bot's memories now; the decisions, as carried out."""
        async with self.db.read() as s:
            bot, profile = await get_bot(s, handle)
            memories = await consolidation.active(s, bot.id)
        ref = store.BotRef(bot.id, bot.handle)
        decisions = await consolidation.deliberate(ref, profile, memories)
        vectors = await embeddings.ahead(self.db, [decision.content for decision in decisions])
        async with self.db.transaction() as s:
            embeddings.use(s, vectors)
            return await consolidation.carry_out(s, ref, decisions)

    # ── the schedule ─────────────────────────────────────────────────────────────────────────
    @asynccontextmanager
    async def running(self) -> AsyncIterator[MemoryUpkeep]:
        """Run the upkeep loop for the duration of the block (the runtime owns it)."""
        try:
            async with background(self._loop(), "openbot-memory-upkeep"):
                yield self
        finally:
            try:
                await self.reflector.release()
            except Exception:  # recorded: the rows are taken over once their lease expires
                log.exception("could not give back the reflections in progress")

    async def _loop(self) -> None:
        while True:
            await self.clock.sleep(self.settings.poll_seconds)
            try:
                await self.step()
            except Exception:  # supervision boundary: the next pass tries again
                stop_if_cancelled()
                log.exception("memory upkeep pass failed")

    async def step(self) -> None:
        """One pass: due reflections, then maintenance and consolidation when they are due."""
        async with self._one_at_a_time:
            await self.reflector.run_due()
            due = await self._claim_due()
            for handle in await self._bots() if due else []:
                try:
                    if "maintain" in due:
                        await self.maintain(handle)
                    if "consolidate" in due:
                        await self.consolidate(handle)
                except Exception:  # supervision boundary: one bot's failure does not stop the rest
                    log.exception("memory upkeep of @%s failed", handle)

    async def _bots(self) -> list[str]:
        async with self.db.read() as s:
            rows = await s.scalars(
                select(Actor.handle)
                .join(BotProfile, BotProfile.actor_id == Actor.id)
                .where(Actor.deleted.is_(False), BotProfile.memory_enabled.is_(True))
                .order_by(Actor.handle)
            )
            return list(rows)

    async def _claim_due(self) -> set[str]:
        """Which scheduled jobs are due, marked as run (first sight: both start counting now).

        The row is read only when this process's last look says a job may be due (another
        process running one meanwhile only makes the look find nothing due)."""
        if self._look_again is not None and self.clock.now() < self._look_again:
            return set()
        every = {
            "maintain": self.settings.memory_maintenance_interval,
            "consolidate": self.settings.memory_consolidation_interval,
        }
        async with self.db.transaction() as s:
            stamp = now(s)
            row = (await s.scalars(dialect(s).for_update(select(Setting).where(Setting.key == _KEY)))).first()
            if row is None:
                row = Setting(key=_KEY, value={job: stamp.isoformat() for job in every})
                s.add(row)
            last = {job: datetime.fromisoformat(str(row.value.get(job, stamp.isoformat()))) for job in every}
            due = {job for job, seconds in every.items() if stamp - last[job] >= timedelta(seconds=seconds)}
            if due:
                row.value = {**row.value, **{job: stamp.isoformat() for job in due}}
                last.update(dict.fromkeys(due, stamp))
            self._look_again = min(last[job] + timedelta(seconds=every[job]) for job in every)
            return due
