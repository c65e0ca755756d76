"""The composition root: database, journal listeners, checkpointer, runner and actor system."""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from typing import Any

from openbot.config import Settings
from openbot.runtime.actors import ActorSystem
from openbot.runtime.bus import Bus
from openbot.runtime.checkpoints import open_checkpointer
from openbot.runtime.delivery import Delivery
from openbot.runtime.runner import Runner
from openbot.runtime.team import seed_team
from openbot.store.db import Database
from openbot.store.migrate import upgrade
from openbot.store.models import ActivityLog
from openbot.store.views import activity_view

log = logging.getLogger(__name__)


class Runtime:
    """Everything a server (or a test) needs, started and stopped as one unit.

    ``async with Runtime(settings) as rt:`` migrates, seeds, recovers and starts the workers;
    leaving the block cancels the workers and closes connections.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.db = Database(settings.resolved_database_url())
        self.bus = Bus()
        self.db.journal_listeners.append(self._journal_committed)
        self.db.activity_listeners.append(self._activity_committed)
        self.delivery = Delivery(max_hops=settings.max_bot_hops)
        self._stack = AsyncExitStack()
        self._task: asyncio.Task[None] | None = None
        self.system: ActorSystem
        self.runner: Runner

    def _journal_committed(self, heads: dict[str | None, int]) -> None:
        for thread_id, upto in heads.items():
            self.bus.journal_changed(thread_id, upto)

    def _activity_committed(self, rows: list[ActivityLog]) -> None:
        for row in rows:
            self.bus.live("activity.created", activity_view(row), row.thread_id)

    async def __aenter__(self) -> Runtime:
        await asyncio.to_thread(upgrade, self.db.url)
        async with self.db.transaction() as s:
            seeded = await seed_team(s, self.settings.default_model())
        if seeded:
            log.info("seeded @you and the default team (model %s)", self.settings.default_model())
        checkpointer = await open_checkpointer(self.db, self._stack)
        self.runner = Runner(self.db, self.settings, self.bus, checkpointer)
        self.system = ActorSystem(self.db, self.settings, self.runner, self.delivery)
        self._task = asyncio.create_task(self.system.run(), name="openbot-actor-system")
        started = asyncio.create_task(self.system.started())
        done, _ = await asyncio.wait({self._task, started}, return_when=asyncio.FIRST_COMPLETED)
        if self._task in done:
            started.cancel()
            self._task.result()  # start-up failed: raise it here
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._task is not None and not self._task.done():
            # Graceful drain: in-flight runs get a moment to finish; what is still running after
            # it is cancelled and recovered (failed with a notice, its mail re-queued) at next start.
            if not await self.system.settle(self.settings.drain_seconds):
                log.warning("stopping with %d run(s) still in flight", len(self.system.in_flight))
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("actor system stopped with an error")
        await self._stack.aclose()
        await self.db.dispose()
