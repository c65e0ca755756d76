"""The composition root: database, clock, journal listeners, checkpointer, runner, actor system,
and the services the API calls."""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from typing import Any

from openbot.config import Settings
from openbot.core.clock import Clock
from openbot.runtime.bus import Bus
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.engagement.classifier import Tier2
from openbot.runtime.memory.embeddings import Embeddings, backfill
from openbot.runtime.memory.upkeep import MemoryUpkeep
from openbot.runtime.runner.runner import Runner
from openbot.runtime.scheduler.recovery import hand_back
from openbot.runtime.scheduler.system import ActorSystem
from openbot.runtime.service.automations import AutomationService
from openbot.runtime.service.drafts import DraftService
from openbot.runtime.service.observe import Observer
from openbot.runtime.service.runs import RunService
from openbot.runtime.service.team import TeamService
from openbot.runtime.service.threads import ThreadService
from openbot.runtime.team import seed_team
from openbot.runtime.tools.sources import build_registry
from openbot.runtime.views import activity_view
from openbot.runtime.webhooks.deliverer import Webhooks
from openbot.store.db import Database
from openbot.store.migrate import upgrade
from openbot.store.models import ActivityLog

log = logging.getLogger(__name__)


class Runtime:
    """Everything a server (or a test) needs, started and stopped as one unit.

    ``async with Runtime(settings) as rt:`` migrates, seeds, recovers and starts the workers;
    leaving the block drains in-flight runs, stops the workers and closes connections.
    """

    def __init__(self, settings: Settings, *, clock: Clock | None = None) -> None:
        self.settings = settings
        self.db = Database(settings.resolved_database_url(), clock=clock)
        self.clock = self.db.clock
        self.bus = Bus()
        self.db.journal_listeners.append(self._journal_committed)
        self.db.activity_listeners.append(self._activity_committed)
        self.delivery = Delivery(max_hops=settings.max_bot_hops, small_group_size=settings.small_group_size)
        self.gate = Tier2(  # the channel gate's model calls (runtime.engagement)
            self.db,
            per_minute=settings.gate_calls_per_minute,
            timeout=settings.gate_timeout_seconds,
            poll_seconds=settings.poll_seconds,
        )
        if settings.embeddings:  # memory relevance by embeddings; a bad spec stops the start here
            self.db.embeddings = Embeddings(settings.embeddings)
        self.webhooks = Webhooks(self.db, settings)
        self.upkeep = MemoryUpkeep(self.db, settings)  # reflection, decay, consolidation
        self.automations = AutomationService(self.db, self.delivery, settings.scheduler_poll_seconds)
        # Every tool source adds itself to this registry (tools/registry); MCP servers start below.
        self.tools, self.mcp = build_registry(settings)
        self._stack = AsyncExitStack()
        self._task: asyncio.Task[None] | None = None
        #: Whether a stop hands back the runs the drain left in flight (tests that stand in for a
        #: SIGKILL turn it off: the runs stay ``running`` under their leases).
        self.hand_back_on_stop = True
        self.system: ActorSystem
        self.runner: Runner
        self.threads: ThreadService
        self.team: TeamService
        self.runs: RunService
        self.drafts: DraftService
        self.observer: Observer

    def _journal_committed(self, heads: dict[str | None, int]) -> None:
        for thread_id, upto in heads.items():
            self.bus.journal_changed(thread_id, upto)

    def _activity_committed(self, rows: list[ActivityLog]) -> None:
        for row in rows:
            self.bus.live("activity.created", dict(activity_view(row)), row.thread_id)

    async def __aenter__(self) -> Runtime:
        await asyncio.to_thread(upgrade, self.db.url)
        async with self.db.transaction() as s:
            seeded = await seed_team(s, self.settings.default_model())
        if seeded:
            log.info("seeded @you and the default team (model %s)", self.settings.default_model())
        if self.db.embeddings is not None:  # memories written before embeddings were on
            async with self.db.transaction() as s:
                embedded = await backfill(s, self.db.embeddings)
            if embedded:
                log.info("embedded %d memories with %s", embedded, self.db.embeddings.spec)
        checkpointer = await self.db.dialect.open_checkpointer(self.db.url, self._stack)
        self.runner = Runner(self.db, self.settings, self.bus, checkpointer, self.tools)
        self.system = ActorSystem(self.db, self.settings, self.runner, self.delivery)
        self.threads = ThreadService(self.db, self.delivery, self.system)
        self.team = TeamService(self.db, self.settings, self.system)
        self.runs = RunService(self.db, self.delivery, self.system, self.tools)
        self.drafts = DraftService(self.db, self.delivery)
        self.observer = Observer(self.db, self.bus, self.system)
        self._task = asyncio.create_task(self.system.run(), name="openbot-actor-system")
        started = asyncio.create_task(self.system.started())
        done, _ = await asyncio.wait({self._task, started}, return_when=asyncio.FIRST_COMPLETED)
        if self._task in done:
            started.cancel()
            try:
                self._task.result()  # start-up failed (its node name is held, say): raise it here
            finally:
                await self._stack.aclose()
                await self.db.dispose()
        await self._stack.enter_async_context(self.automations.running())
        if self.settings.run_workers:
            await self._stack.enter_async_context(self.upkeep.running())
        await self._stack.enter_async_context(self.webhooks.running())
        if self.settings.run_workers:
            await self._stack.enter_async_context(self.gate.running())
        await self._stack.enter_async_context(self.mcp.running())  # in the background
        return self

    async def __aexit__(self, *exc: Any) -> None:
        left: list[str] = []
        if self._task is not None and not self._task.done():
            # Graceful drain: in-flight runs get a moment to finish; what is still running after
            # it is cancelled and handed back (failed with a notice, its mail re-queued) at once.
            if not await self.system.settle(self.settings.drain_seconds):
                left = list(self.system.in_flight) if self.hand_back_on_stop else []
                log.warning("stopping with %d run(s) still in flight", len(self.system.in_flight))
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("actor system stopped with an error")
        if left:
            try:
                handed = await hand_back(self.system, left)
                log.info("handed back %d run(s) cut off by the stop", handed)
            except Exception:  # their leases lapse instead, and another process takes them over
                log.exception("could not hand back the runs cut off by the stop")
        await self._stack.aclose()
        await self.db.dispose()
