"""The actor system: one worker per bot, a global run slot, leases, recovery (DESIGN §6).

A worker takes a global slot first, then claims its bot's next batch in one transaction; the run
executes in the system's task group and gives the slot back when it settles. Workers are created
lazily on the first wake: bots are woken after every commit that put mail in their mailbox
(``Database.mail_listeners``), and by the periodic poll, which is the truth.
``run_until_idle`` lets tests and the CLI drain the system without sleeps.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import replace

from sqlalchemy import case, distinct, func, select

from openbot.config import Settings
from openbot.core.states import IN_FLIGHT_RUNS, ItemStatus
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.governor.admission import Admission
from openbot.runtime.loops import stop_if_cancelled
from openbot.runtime.runner.runner import Runner
from openbot.runtime.runs.claim import Claim, ClaimPaused, claim_next
from openbot.runtime.runs.outcome import Outcome
from openbot.runtime.scheduler import execution, node, recovery
from openbot.runtime.scheduler.maintenance import Maintenance
from openbot.runtime.scheduler.worker import BotWorker
from openbot.store.db import Database
from openbot.store.dialect import only_takes_mail, parse_announcement
from openbot.store.models import Actor, BotProfile, InboxItem, Run

log = logging.getLogger(__name__)

# Bots with queued mail and fewer threads in flight than their ceiling (what ``claim_next`` checks
# before it picks), one row per bot: built once.
_IN_FLIGHT_THREADS = (
    select(func.count(distinct(Run.thread_id)))
    .where(Run.bot_id == Actor.id, Run.status.in_(IN_FLIGHT_RUNS))
    .scalar_subquery()
)
_HAS_QUEUED = (
    select(InboxItem.id).where(InboxItem.actor_id == Actor.id, InboxItem.status == ItemStatus.QUEUED).exists()
)
_CLAIMABLE = (
    select(Actor.id)
    .join(BotProfile, BotProfile.actor_id == Actor.id)
    .where(
        Actor.kind == "bot",
        Actor.enabled.is_(True),
        Actor.deleted.is_(False),
        _HAS_QUEUED,
        _IN_FLIGHT_THREADS
        < case((BotProfile.max_parallel_threads < 1, 1), else_=BotProfile.max_parallel_threads),
    )
)


class ActorSystem:
    def __init__(self, db: Database, settings: Settings, runner: Runner, delivery: Delivery) -> None:
        self.db = db
        self.clock = db.clock
        self.settings = settings
        self.runner = runner
        self.delivery = delivery
        self.slots = asyncio.Semaphore(settings.max_concurrent_runs)
        #: This process's node name, its runs' lease owner: the configured one until ``run`` holds one.
        self.owner = node.configured_name(settings)
        self.workers: dict[str, BotWorker] = {}
        self.in_flight: dict[str, asyncio.Task[None]] = {}  # run id → task that runs and settles it
        #: Runs whose claim is committing: alive here before they are in flight (``alive``).
        self.claiming: set[str] = set()
        self.executions: dict[str, asyncio.Task[Outcome]] = {}  # run id → the agent's own task
        self.maintenance = Maintenance(self)
        self._group: asyncio.TaskGroup | None = None
        self._tick = asyncio.Event()
        self._poll_wanted = asyncio.Event()
        self.unpaused = asyncio.Event()
        self.unpaused.set()
        #: The governor's bounds for every claim; its backlog mark is set when the system starts.
        self.admission = Admission(settings.stale_trigger_seconds, settings.run_time_limit_seconds)
        self._started = asyncio.Event()
        db.mail_listeners.append(self.notify)

    # ── lifecycle ────────────────────────────────────────────────────────────────────────────
    async def run(self) -> None:
        """Own every background task until cancelled (the runtime cancels it when it stops)."""
        async with node.hold(self.db, self.settings) as self.owner, asyncio.TaskGroup() as group:
            self._group = group
            self.admission = replace(self.admission, backlog_before=self.clock.now())
            await self.recover(expired_only=self.db.dialect.shared, ours=True)
            group.create_task(self._maintain_forever(), name="openbot-maintain")
            group.create_task(self._poll_when_asked(), name="openbot-poll")
            group.create_task(self.db.dialect.listen(self.db.url, self.heard), name="openbot-listen")
            await self.wake_queued()
            self._started.set()
            await asyncio.Future()  # until cancelled

    async def started(self) -> None:
        await self._started.wait()

    def notify(self, bot_ids: Iterable[str]) -> None:
        """Wake the workers of these bots (creating them on first use)."""
        for bot_id in bot_ids if self.settings.run_workers else ():
            worker = self.workers.get(bot_id)
            if worker is None:
                if self._group is None:
                    continue  # not running: the start-up sweep will find the mail
                worker = self.workers[bot_id] = BotWorker(self, bot_id)
                self._group.create_task(worker.loop(), name=f"openbot-worker-{bot_id}")
            worker.wake.set()
        self.changed()

    async def wake_queued(self) -> None:
        """Wake every bot that has queued mail and room under its ceiling (the poll that backs up
        the wake-ups). A bot at its ceiling is left alone: a claim would find nothing, and the run
        that holds its last thread wakes it when it settles (``execution.execute``)."""
        async with self.db.read() as s:
            bot_ids = (await s.scalars(_CLAIMABLE)).all()
        self.notify(bot_ids)

    def heard(self, payload: str) -> None:
        """Another process committed journal rows (and maybe mail): tell readers, look for work.

        The announcement names the bots it gave mail to (``Dialect.announce``), and a finished
        run's bot if it has mail left: they are woken at once, without a query. A claim's, or a
        finish's that names nobody, says there is nothing to look for. Any other (a run was
        cancelled, a bot's ceiling changed, or too many bots to name) asks for a poll, which finds
        every bot with room and mail; the maintenance poll stays the truth either way.
        """
        sender, woke, look = parse_announcement(payload)
        if sender == self.db.instance:
            return  # our own commit: its wake-ups went out in-process already
        self.db.journal_committed({None: 0})
        if not self.settings.run_workers:
            return  # an API-only process runs no bots: nothing to look for
        if woke:
            self.notify(woke)
        if look:
            self._poll_wanted.set()

    async def _poll_when_asked(self) -> None:
        """Coalesce announcements: one look for queued mail however many arrived meanwhile."""
        while True:
            await self._poll_wanted.wait()
            self._poll_wanted.clear()
            try:
                await self.wake_queued()
            except Exception:  # supervision boundary: the maintenance poll tries again
                stop_if_cancelled()
                log.exception("poll after an announcement failed")

    def pause(self) -> None:
        """Stop starting runs (in-flight runs finish). Tests use it to stage mail; operators to drain."""
        self.unpaused.clear()

    def unpause(self) -> None:
        self.unpaused.set()
        self.changed()

    async def settle(self, timeout: float) -> bool:
        """Stop starting runs and wait (up to ``timeout``) for the in-flight ones to settle."""
        self.pause()
        try:
            async with asyncio.timeout(timeout):
                while self.in_flight or self.claiming:  # a claim committing starts its run
                    self._tick.clear()
                    if self.in_flight or self.claiming:
                        await self._tick.wait()
        except TimeoutError:
            return False
        return True

    # ── claiming and running ─────────────────────────────────────────────────────────────────
    async def claim(self, bot_id: str, *, unless_paused: bool = False) -> Claim | None:
        """Claim the bot's next batch as a running run (the caller holds a slot, and starts the
        run as soon as this returns). ``unless_paused``: a claim the system was paused during
        (one that waited for the bot's lock while a run finished) is rolled back and raises
        :class:`ClaimPaused`: pausing stops starting runs, whenever a claim began."""
        claimed: Claim | None = None
        try:
            async with self.db.transaction() as s:
                only_takes_mail(s)  # its announcement sends nobody looking for work
                claimed = await claim_next(s, bot_id, self.owner, self.settings.lease_seconds, self.admission)
                if claimed is not None:
                    if unless_paused and not self.unpaused.is_set():
                        raise ClaimPaused(bot_id)
                    # The commit can yield to the maintenance pass: the run is ours and alive
                    # from here on, whatever its lease says (a stalled process's lease lapses).
                    self.claiming.add(claimed.run_id)
            return claimed
        finally:
            if claimed is not None and claimed.run_id in self.claiming:
                self.claiming.discard(claimed.run_id)
                self.changed()  # ``settle`` waits for claims that are committing

    def alive(self) -> set[str]:
        """The runs this process is working on: in flight, or being claimed."""
        return {*self.in_flight, *self.claiming}

    def start_run(self, claim: Claim) -> None:
        if self._group is None:
            raise RuntimeError("the actor system is not running")
        task = self._group.create_task(execution.execute(self, claim), name=f"openbot-run-{claim.run_id}")
        self.in_flight[claim.run_id] = task

    async def cancel(self, run_id: str) -> None:
        """Stop a run's agent in this process, if it runs here (its end is written already)."""
        agent = self.executions.get(run_id)
        if agent is not None:
            agent.cancel()
        await self.runner.forget(run_id)

    # ── recovery and maintenance ─────────────────────────────────────────────────────────────
    async def recover(self, *, expired_only: bool, ours: bool = False) -> int:
        return await recovery.recover(self, expired_only=expired_only, ours=ours)

    async def maintain(self) -> None:
        """One maintenance pass (the loop runs one every ``poll_seconds`` on the clock)."""
        await self.maintenance.maintain()

    async def _maintain_forever(self) -> None:
        interval = min(self.settings.poll_seconds, self.settings.lease_seconds / 3)
        while True:
            await self.clock.sleep(interval)
            try:
                await self.maintain()
            except Exception:  # supervision boundary: the next pass tries again
                stop_if_cancelled()
                log.exception("maintenance pass failed")

    # ── idleness, for tests and the CLI ──────────────────────────────────────────────────────
    def changed(self) -> None:
        self._tick.set()

    def is_idle(self) -> bool:
        return not self.in_flight and all(w.idle for w in self.workers.values())

    async def run_until_idle(self, timeout: float = 30.0) -> None:
        """Wait until no run is in flight and no worker has anything it can pick."""
        async with asyncio.timeout(timeout):
            while True:
                self._tick.clear()
                if self.is_idle():
                    for _ in range(3):  # let wakes scheduled by the last commit land
                        await asyncio.sleep(0)
                    if self.is_idle():
                        return
                    continue
                await self._tick.wait()
