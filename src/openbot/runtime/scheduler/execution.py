"""Executing one claimed run: the agent in its own task, then its outcome in one transaction.

The agent runs in a task of its own so that cancelling a run (through the API, or noticed by the
lease heartbeat) interrupts the model call, never a transaction of the system.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from openbot.core.errors import StaleLease
from openbot.core.states import IN_FLIGHT_RUNS, RunStatus
from openbot.runtime.memory.context import record
from openbot.runtime.runs.claim import Claim
from openbot.runtime.runs.ending import end_run
from openbot.runtime.runs.outcome import finish
from openbot.store.models import PreparedContext, Run

if TYPE_CHECKING:
    from openbot.runtime.scheduler.system import ActorSystem

log = logging.getLogger(__name__)


async def execute(system: ActorSystem, claim: Claim) -> None:
    """Run a claim to its end and give its slot back, whatever happens."""
    terminal = True
    moved_on = False  # the run's end was written by someone else (a cancel, a takeover)
    more = True  # wake the bot's worker again unless we know it has nothing queued
    execution = asyncio.create_task(system.runner.execute(claim), name=f"openbot-execute-{claim.run_id}")
    system.executions[claim.run_id] = execution
    try:
        try:
            outcome = await execution
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if execution.cancelled() and not (current and current.cancelling()):
                moved_on = True
                await _keep_context(system, claim.run_id)
                return  # cancelled through the API or the heartbeat: the run's end is written already
            execution.cancel()  # the system is stopping: the agent task stops with its owner
            # Not its end: it is handed back (a resume waits for its answer again, from its
            # durable checkpoint, which must stay).
            terminal = not claim.resume
            raise
        terminal = outcome.interrupt is None
        async with system.db.transaction() as s:
            more = await finish(s, claim, outcome, system.delivery)
    except StaleLease:
        moved_on = True
        log.info("run %s moved on without this worker; its result is dropped", claim.run_id)
        await _keep_context(system, claim.run_id)
    except Exception:  # supervision boundary: record and keep the system alive
        log.exception("run %s could not be finished", claim.run_id)
        await fail(system, claim.run_id, "internal", "the run could not be finished; see the server log")
    finally:
        system.runner.contexts.pop(claim.run_id, None)  # written with the outcome, or never will be
        system.executions.pop(claim.run_id, None)
        system.slots.release()
        if terminal:  # a run that never paused kept its transcript in memory only
            # A resumed run taken over may be resuming again elsewhere from its durable checkpoint
            # (``runs.ending.resume_again``): only what this process held in memory goes.
            await system.runner.forget(claim.run_id, durable=claim.resume and not moved_on)
        # Before leaving in_flight, so idleness never flickers. Mail that arrives after the check
        # above wakes the worker through its own commit.
        if more:
            system.notify([claim.bot_id])
        system.in_flight.pop(claim.run_id, None)
        system.changed()


async def _keep_context(system: ActorSystem, run_id: str) -> None:
    """A run cancelled or taken over after its preparation still tells what its first model call
    saw: its outcome, which carries that, is dropped."""
    context = system.runner.contexts.get(run_id)
    if context is None:
        return
    try:
        async with system.db.transaction() as s:
            if await s.get(Run, run_id) is not None and await s.get(PreparedContext, run_id) is None:
                await record(s, context)
    except Exception:  # recorded, never fatal: only the run's context is missing
        log.exception("could not record the context of run %s", run_id)


async def fail(system: ActorSystem, run_id: str, code: str, message: str) -> None:
    try:
        async with system.db.transaction() as s:
            run = await s.get(Run, run_id)
            if run is not None and run.status in IN_FLIGHT_RUNS:
                await end_run(s, run, RunStatus.FAILED, {"code": code, "message": message}, system.delivery)
    except Exception:  # supervision boundary: the run stays in flight until its lease expires
        log.exception("could not record the failure of run %s", run_id)
