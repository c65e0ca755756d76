"""Automations as the API, the bots' tools and the scheduler use them.

The scheduler is :meth:`AutomationService.run`: a loop on the runtime's clock that sleeps until the
next due time or ``OPENBOT_SCHEDULER_POLL_SECONDS``, whichever is sooner, and calls
:meth:`fire_due`. Tests call ``fire_due`` themselves after moving a fake clock; a pass in progress
and a caller's never overlap in one process, and across processes the firing transaction decides
(``automations.firing``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from openbot.core.errors import Conflict, OpenBotError
from openbot.runtime.automations import definitions, firing
from openbot.runtime.automations.commands import AutomationCreate, AutomationUpdate
from openbot.runtime.automations.views import AutomationView, OccurrenceView, occurrence_view
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.loops import background, stop_if_cancelled
from openbot.store.db import Database
from openbot.store.models import Automation, AutomationOccurrence

log = logging.getLogger(__name__)

DUE_PER_PASS = 200  # automations fired per pass at most; the next pass takes the rest


@dataclass
class AutomationService:
    db: Database
    delivery: Delivery
    poll_seconds: float = 1.0
    _one_pass: asyncio.Lock = field(default_factory=asyncio.Lock)

    # ── records ────────────────────────────────────────────────────────────────────────────
    # ``actor``: the actor an actor token acts as, who sees and changes only the automations it
    # owns (404 for the others) and schedules only into threads it takes part in; None: the admin.
    async def create(
        self, command: AutomationCreate, *, owner: str, actor: str | None = None
    ) -> AutomationView:
        async with self.db.transaction() as s:
            row = await definitions.create(s, command, owner, scoped=actor is not None)
            return await definitions.view(s, row.id)

    async def list_automations(
        self, *, bot: str | None = None, actor: str | None = None
    ) -> list[AutomationView]:
        async with self.db.read() as s:
            return await definitions.list_views(s, bot=bot, owner=actor)

    async def get(self, automation_id: str, *, actor: str | None = None) -> AutomationView:
        async with self.db.read() as s:
            await definitions.get(s, automation_id, owner=actor)
            return await definitions.view(s, automation_id)

    async def update(
        self, automation_id: str, command: AutomationUpdate, *, actor: str | None = None
    ) -> AutomationView:
        async with self.db.transaction() as s:
            await definitions.update(s, automation_id, command, owner=actor)
            return await definitions.view(s, automation_id)

    async def delete(self, automation_id: str, *, actor: str | None = None) -> None:
        async with self.db.transaction() as s:
            await definitions.delete(s, automation_id, owner=actor)

    async def occurrences(
        self, automation_id: str, *, limit: int = 100, actor: str | None = None
    ) -> list[OccurrenceView]:
        """The newest ``limit`` occurrences, newest first."""
        async with self.db.read() as s:
            await definitions.get(s, automation_id, owner=actor)
            rows = await s.scalars(
                select(AutomationOccurrence)
                .where(AutomationOccurrence.automation_id == automation_id)
                .order_by(AutomationOccurrence.scheduled_for.desc(), AutomationOccurrence.id.desc())
                .limit(limit)
            )
            return [occurrence_view(r) for r in rows]

    # ── firing ─────────────────────────────────────────────────────────────────────────────
    async def run_now(self, automation_id: str, *, actor: str | None = None) -> OccurrenceView:
        """Fire once now, whatever the schedule (which does not move)."""
        if actor is not None:
            await self.get(automation_id, actor=actor)
        try:
            async with self.db.transaction() as s:
                occurrence = await firing.fire(
                    s, self.delivery, automation_id, self.db.clock.now(), manual=True
                )
                if occurrence is None:  # manual firings always record one
                    raise Conflict("the automation did not fire", {"automation_id": automation_id})
                return occurrence_view(occurrence)
        except IntegrityError as exc:
            raise Conflict(
                "the automation already fired at this instant", {"automation_id": automation_id}
            ) from exc

    async def fire_due(self) -> list[OccurrenceView]:
        """One pass: every automation due now gets its occurrence. Returns those this process wrote."""
        async with self._one_pass:
            stamp = self.db.clock.now()
            async with self.db.read() as s:
                due = list(
                    await s.scalars(
                        select(Automation.id)
                        .where(Automation.enabled.is_(True), Automation.next_run_at <= stamp)
                        .order_by(Automation.next_run_at)
                        .limit(DUE_PER_PASS)
                    )
                )
            fired = []
            for automation_id in due:
                occurrence = await self._fire_one(automation_id)
                if occurrence is not None:
                    fired.append(occurrence)
            return fired

    async def _fire_one(self, automation_id: str) -> OccurrenceView | None:
        now = self.db.clock.now()
        try:
            async with self.db.transaction() as s:
                occurrence = await firing.fire(s, self.delivery, automation_id, now)
                return occurrence_view(occurrence) if occurrence is not None else None
        except IntegrityError:
            return None  # another process recorded this scheduled time first
        except Exception as exc:  # supervision boundary: record it, the schedule moves on
            log.exception("automation %s failed to fire", automation_id)
            error = (
                exc.to_dict() if isinstance(exc, OpenBotError) else {"code": "internal", "message": repr(exc)}
            )
            async with self.db.transaction() as s:
                row = await s.get(Automation, automation_id)
                if row is not None:
                    firing.record_failure(s, row, now, error)
            return None

    async def next_due(self) -> float | None:
        """Seconds until the next enabled automation is due (None: none is scheduled)."""
        async with self.db.read() as s:
            soonest = await s.scalar(
                select(func.min(Automation.next_run_at)).where(Automation.enabled.is_(True))
            )
        if soonest is None:
            return None
        return max(0.0, (soonest - self.db.clock.now()).total_seconds())

    async def run(self) -> None:
        """The scheduler loop, until cancelled (the runtime owns it)."""
        while True:
            try:
                wait = await self.next_due()  # idle, one small indexed read per poll
                if wait == 0.0:
                    await self.fire_due()
                    wait = await self.next_due()
            except Exception:  # supervision boundary: the next pass tries again
                stop_if_cancelled()
                log.exception("automation pass failed")
                wait = None
            pause = self.poll_seconds if wait is None else min(self.poll_seconds, max(wait, 0.01))
            await self.db.clock.sleep(pause)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the scheduler loop for the duration of the block (the runtime's stack owns it)."""
        async with background(self.run(), "openbot-automations"):
            yield
