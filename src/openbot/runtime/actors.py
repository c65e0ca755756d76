"""The actor system: one worker per bot, a global run slot, leases, recovery (DESIGN §6).

A worker takes a global slot first, then claims its bot's next batch in one transaction; the run
executes in the system's task group and gives the slot back when it settles. Workers are created
lazily on the first wake. ``run_until_idle`` lets tests and the CLI drain the system without sleeps.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Iterable
from datetime import timedelta

from sqlalchemy import select, update

from openbot.config import Settings
from openbot.runtime.delivery import Delivery, release_holds
from openbot.runtime.runner import Runner
from openbot.runtime.runs import Claim, Outcome, StaleLease, claim_next, end_run, finish, has_mail
from openbot.store.db import Database
from openbot.store.journal import log_activity, now, prune_journal
from openbot.store.models import Actor, BotProfile, HeldHandoff, InboxItem, Run

log = logging.getLogger(__name__)


class BotWorker:
    """Drains one bot's mailbox. Never runs two threads beyond the bot's ceiling, or one twice."""

    def __init__(self, system: ActorSystem, bot_id: str) -> None:
        self.system = system
        self.bot_id = bot_id
        self.wake = asyncio.Event()
        self.busy = False  # inside a claim loop

    async def loop(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            self.busy = True
            try:
                await self.drain()
            except Exception:  # supervision boundary: a bad claim must not stop the system
                log.exception("worker for bot %s failed to claim; retrying on the next wake", self.bot_id)
            finally:
                self.busy = False
                self.system.changed()

    async def drain(self) -> None:
        system = self.system
        while True:
            await system.unpaused.wait()
            await system.slots.acquire()
            try:
                claim = await system.claim(self.bot_id)
            except BaseException:
                system.slots.release()
                raise
            if claim is None:
                system.slots.release()
                return
            system.start_run(claim)
            if claim.at_ceiling:
                return  # nothing more to claim until a run settles (which wakes this worker)


class ActorSystem:
    def __init__(self, db: Database, settings: Settings, runner: Runner, delivery: Delivery) -> None:
        self.db = db
        self.settings = settings
        self.runner = runner
        self.delivery = delivery
        self.slots = asyncio.Semaphore(settings.max_concurrent_runs)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"
        self.workers: dict[str, BotWorker] = {}
        self.in_flight: dict[str, asyncio.Task[None]] = {}  # run id → task that runs and settles it
        self.executions: dict[str, asyncio.Task[Outcome]] = {}  # run id → the agent's own task
        self._group: asyncio.TaskGroup | None = None
        self._tick = asyncio.Event()
        self.unpaused = asyncio.Event()
        self.unpaused.set()
        self._started = asyncio.Event()
        delivery.wake = self.notify

    # ── lifecycle ────────────────────────────────────────────────────────────────────────────
    async def run(self) -> None:
        """Own every background task until cancelled (the server's lifespan cancels it)."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            await self.recover()
            group.create_task(self._maintain(), name="openbot-maintain")
            await self.wake_queued()
            self._started.set()
            await asyncio.Future()  # until cancelled

    async def started(self) -> None:
        await self._started.wait()

    def notify(self, bot_ids: Iterable[str]) -> None:
        for bot_id in bot_ids:
            worker = self.workers.get(bot_id)
            if worker is None:
                if self._group is None:
                    continue  # not running: the start-up sweep will find the mail
                worker = self.workers[bot_id] = BotWorker(self, bot_id)
                self._group.create_task(worker.loop(), name=f"openbot-worker-{bot_id}")
            worker.wake.set()
        self.changed()

    async def wake_queued(self) -> None:
        async with self.db.read() as s:
            bot_ids = (
                await s.scalars(
                    select(InboxItem.actor_id)
                    .distinct()
                    .join(Actor, Actor.id == InboxItem.actor_id)
                    .where(InboxItem.status == "queued", Actor.kind == "bot")
                )
            ).all()
        self.notify(bot_ids)

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
                while self.in_flight:
                    self._tick.clear()
                    if self.in_flight:
                        await self._tick.wait()
        except TimeoutError:
            return False
        return True

    # ── claiming and running ─────────────────────────────────────────────────────────────────
    async def claim(self, bot_id: str) -> Claim | None:
        async with self.db.transaction() as s:
            row = (
                await s.execute(
                    select(Actor, BotProfile)
                    .join(BotProfile, BotProfile.actor_id == Actor.id)
                    .where(Actor.id == bot_id)
                )
            ).one_or_none()
            if row is None:
                return None
            bot, profile = row
            if bot.deleted or not bot.enabled:
                return None
            return await claim_next(s, bot, profile, self.owner, self.settings.lease_seconds)

    def start_run(self, claim: Claim) -> None:
        assert self._group is not None
        task = self._group.create_task(self._run(claim), name=f"openbot-run-{claim.run_id}")
        self.in_flight[claim.run_id] = task

    async def _run(self, claim: Claim) -> None:
        woken: list[str] = []
        terminal = True
        more = True  # wake the bot's worker again unless we know it has nothing queued
        # The agent runs in its own task so that cancelling a run (API, or noticed by the heartbeat)
        # interrupts the model call, never a transaction of this function.
        execution = asyncio.create_task(self.runner.execute(claim), name=f"openbot-execute-{claim.run_id}")
        self.executions[claim.run_id] = execution
        try:
            try:
                outcome = await execution
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if execution.cancelled() and not (current and current.cancelling()):
                    return  # cancelled through the API: the cancel already wrote the run's end
                raise
            terminal = outcome.interrupt is None
            async with self.db.transaction() as s:
                woken = await finish(s, claim, outcome, self.delivery)
                more = await has_mail(s, claim.bot_id)
        except StaleLease:
            log.info("run %s moved on without this worker; its result is dropped", claim.run_id)
        except Exception:  # supervision boundary: record and keep the system alive
            log.exception("run %s could not be finished", claim.run_id)
            await self._fail(claim.run_id, "internal", "the run could not be finished; see the server log")
        finally:
            self.executions.pop(claim.run_id, None)
            self.slots.release()
            if terminal:  # a run that never paused kept its transcript in memory only
                await self.runner.forget(claim.run_id, durable=claim.resume)
            # Before leaving in_flight, so idleness never flickers. Mail that arrives after the
            # check above wakes the worker through its own post.
            self.notify([claim.bot_id, *woken] if more else woken)
            self.in_flight.pop(claim.run_id, None)
            self.changed()

    async def cancel(self, run_id: str) -> None:
        """Stop a run's agent in this process, if it runs here (the API wrote the run's end already)."""
        execution = self.executions.get(run_id)
        if execution is not None:
            execution.cancel()
        await self.runner.forget(run_id)

    async def _fail(self, run_id: str, code: str, message: str) -> None:
        try:
            async with self.db.transaction() as s:
                run = await s.get(Run, run_id)
                if run is not None and run.status in ("queued", "running"):
                    await end_run(s, run, "failed", {"code": code, "message": message}, self.delivery)
        except Exception:
            log.exception("could not record the failure of run %s", run_id)

    # ── recovery, leases, polling ────────────────────────────────────────────────────────────
    async def recover(self, *, expired_only: bool | None = None) -> int:
        """Fail in-flight runs nobody owns any more, re-queue their mail, release held hand-offs.

        SQLite is single-process: at start every queued/running run is orphaned. On PostgreSQL other
        processes may be alive, so only runs whose lease expired are taken over.
        """
        if expired_only is None:
            expired_only = not self.db.is_sqlite
        stamp = now()
        async with self.db.transaction() as s:
            stmt = select(Run).where(Run.status.in_(("queued", "running")))
            if expired_only:
                stmt = stmt.where(Run.lease_expires_at < stamp)
            orphans = list(
                await s.scalars(stmt.with_for_update(skip_locked=True) if not self.db.is_sqlite else stmt)
            )
            for run in orphans:
                await end_run(
                    s,
                    run,
                    "failed",
                    {"code": "internal", "message": "the server restarted while this run was in flight"},
                    self.delivery,
                    requeue_items=True,
                    max_attempts=self.settings.max_item_attempts,
                )
            if not expired_only:
                # Mail claimed by nobody (a crash between claim and run row) goes back to the queue.
                await s.execute(
                    update(InboxItem)
                    .where(InboxItem.status == "processing", InboxItem.kind == "message")
                    .values(status="queued", claimed_by_run=None, updated_at=stamp)
                )
            holds = (
                await s.execute(
                    select(HeldHandoff.sender_id, HeldHandoff.thread_id)
                    .distinct()
                    .where(HeldHandoff.status == "pending")
                )
            ).all()
            woken: list[str] = []
            for sender_id, thread_id in holds:
                sender = await s.get(Actor, sender_id)
                if sender is not None:
                    woken += await release_holds(s, sender, thread_id)
            if orphans:
                log_activity(
                    s,
                    "system.recovered",
                    f"recovered {len(orphans)} run(s) left in flight",
                    level="warning",
                    detail={"runs": [r.id for r in orphans]},
                )
        for run in orphans:
            await self.runner.forget(run.id)
        self.notify(woken)
        return len(orphans)

    async def _maintain(self) -> None:
        """Heartbeat our leases, notice runs cancelled elsewhere, take over expired ones, poll."""
        interval = min(self.settings.poll_seconds, self.settings.lease_seconds / 3)
        next_prune = 0.0
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            try:
                if loop.time() >= next_prune:
                    await self.prune()
                    next_prune = loop.time() + 3600
                await self._heartbeat()
                if not self.db.is_sqlite:
                    await self.recover(expired_only=True)
                await self.wake_queued()
            except Exception:  # supervision boundary
                log.exception("maintenance pass failed")

    async def prune(self) -> int:
        """Drop journal rows past the retention period (SSE clients replaying from there get a reset)."""
        cutoff = now() - timedelta(days=self.settings.journal_retention_days)
        async with self.db.transaction() as s:
            return await prune_journal(s, cutoff)

    async def _heartbeat(self) -> None:
        if not self.in_flight:
            return
        expires = now() + timedelta(seconds=self.settings.lease_seconds)
        async with self.db.transaction() as s:
            await s.execute(
                update(Run)
                .where(
                    Run.lease_owner == self.owner, Run.status == "running", Run.id.in_(list(self.in_flight))
                )
                .values(lease_expires_at=expires)
            )
            gone = (
                await s.scalars(
                    select(Run.id).where(Run.id.in_(list(self.in_flight)), Run.status != "running")
                )
            ).all()
        for run_id in gone:  # cancelled elsewhere, or taken over: stop working on it
            execution = self.executions.get(run_id)
            if execution is not None:
                execution.cancel()

    # ── idleness, for tests and the CLI ──────────────────────────────────────────────────────
    def changed(self) -> None:
        self._tick.set()

    def is_idle(self) -> bool:
        return not self.in_flight and all(not w.busy and not w.wake.is_set() for w in self.workers.values())

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
