"""Ending a run from outside: cancelled by a human, or failed by a restart or a lease takeover.

The lease token is bumped, so the worker that was running it (in this process or another) is
fenced off; its mail is cancelled, failed or — after a crash — queued again; a notice says so.
A resumed run cut off by a crash is not failed: it waits for its answer again, and the answer
already given is applied again (:func:`resume_again`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import Conflict, NotFound
from openbot.core.scheduling import ItemKind
from openbot.core.states import ACTIVE_RUNS, ItemStatus, RunStatus, check
from openbot.runtime import notices
from openbot.runtime.delivery.holds import release_holds
from openbot.runtime.delivery.inbox import announce
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.governor.disposals import Reason, record_disposal
from openbot.runtime.runs.events import add_run_event, journal_run, log_run, move
from openbot.store.db import now, wake_after_commit
from openbot.store.models import Actor, InboxItem, Run, Thread


async def cancel(session: AsyncSession, run_id: str, delivery: Delivery, reason: str = "cancelled") -> Run:
    # Locked (PostgreSQL): a finish, a resume or a claim of the run waits, or is waited for, and
    # whichever comes second sees what the first did (SQLite's writer is serialised already).
    run = await session.get(Run, run_id, with_for_update=True)
    if run is None:
        raise NotFound(f"run {run_id} not found", {"run_id": run_id})
    if run.status not in ACTIVE_RUNS:
        raise Conflict(f"run {run_id} is already {run.status}", {"status": run.status})
    await end_run(session, run, RunStatus.CANCELLED, {"code": "cancelled", "message": reason}, delivery)
    return run


async def end_run(
    session: AsyncSession,
    run: Run,
    status: RunStatus,
    error: dict[str, Any],
    delivery: Delivery,
    *,
    requeue_items: bool = False,
    max_attempts: int = 3,
) -> None:
    """Cancel or fail a run that is not finishing by itself, and say so in the thread."""
    bot = await session.get(Actor, run.bot_id)
    thread = await session.get(Thread, run.thread_id)
    if bot is None or thread is None:  # both cascade-delete the run: cannot happen
        raise NotFound(f"run {run.id} has no bot or thread", {"run_id": run.id})
    move(run, status)
    run.error = error
    run.finished_at = now(session)
    run.lease_token += 1  # fence off whoever was running it
    await add_run_event(session, run, "error", error)
    requeued, exhausted = await _release_items(session, run, bot, status, requeue_items, max_attempts)
    if requeued:
        wake_after_commit(session, [bot.id])
    else:  # its mail is handled (cancelled or failed): hand-offs it held may go now (invariant 8)
        await session.flush()
        await release_holds(session, bot, thread.id)
    journal_run(session, run, bot.handle)
    cancelled = status == RunStatus.CANCELLED
    notice = notices.run_ended(
        bot.handle,
        run.id,
        run.hop,
        cancelled=cancelled,
        error=error,
        requeued=requeued,
        exhausted=exhausted,
        max_attempts=max_attempts,
    )
    await delivery.post_notice(session, thread, notice)
    log_run(
        session,
        f"run.{status}",
        notice.text,
        run,
        bot,
        level="warning",
        detail={**error, "requeued": requeued, "exhausted": exhausted},
    )


async def _release_items(
    session: AsyncSession, run: Run, bot: Actor, status: RunStatus, requeue: bool, max_attempts: int
) -> tuple[int, int]:
    """Settle the items the run held (and its unanswered questions); returns how many were re-queued
    and how many would have been but had had their attempts: those get a disposal (invariant 13)."""
    items = list(
        await session.scalars(
            select(InboxItem).where(
                ((InboxItem.claimed_by_run == run.id) & (InboxItem.status == ItemStatus.PROCESSING))
                | ((InboxItem.run_id == run.id) & (InboxItem.status == ItemStatus.QUEUED))
            )
        )
    )
    ended = ItemStatus.CANCELLED if status == RunStatus.CANCELLED else ItemStatus.FAILED
    requeued = 0
    exhausted: list[InboxItem] = []
    for item in items:
        if requeue and item.kind == ItemKind.MESSAGE and item.attempts < max_attempts:
            item.status = check(ItemStatus, item.status, ItemStatus.QUEUED)
            item.claimed_by_run = None
            requeued += 1
        else:
            item.status = check(ItemStatus, item.status, ended)
            if requeue and item.kind == ItemKind.MESSAGE:
                exhausted.append(item)
        item.updated_at = run.finished_at or now(session)
    await announce(session, [item for item in items if item.kind == ItemKind.QUESTION])  # humans' items
    if exhausted:
        record_disposal(
            session,
            bot=bot,
            thread_id=run.thread_id,
            reason=Reason.ATTEMPTS_EXHAUSTED,
            message_ids=[item.message_id or "" for item in exhausted],
            item_ids=[item.id for item in exhausted],
            bound=float(max_attempts),
            run_id=run.id,
        )
    return requeued, len(exhausted)


async def resume_again(
    session: AsyncSession, run: Run, delivery: Delivery, *, max_attempts: int = 3, why: str = ""
) -> bool:
    """Put a run that was resuming back to ``waiting_human`` with its ``resume`` item queued again;
    False when it was not resuming (or its answer has had its attempts: it is failed as any run).

    The human's answer is the run's ``resumed`` event and its checkpoint the durable one written
    when it paused, so nothing is lost (invariant 12: the question was answered, not abandoned); the
    steps it took after resuming are taken again, as a re-queued message's run is run again.
    """
    item = await session.scalar(
        select(InboxItem).where(
            InboxItem.claimed_by_run == run.id,
            InboxItem.status == ItemStatus.PROCESSING,
            InboxItem.kind == ItemKind.RESUME,
        )
    )
    if item is None or run.interrupt is None or item.attempts >= max_attempts:
        return False
    bot = await session.get(Actor, run.bot_id)
    thread = await session.get(Thread, run.thread_id)
    if bot is None or thread is None:
        return False
    move(run, RunStatus.WAITING_HUMAN)
    run.lease_token += 1  # fence off whoever was running it
    # Marks the cut in the run's steps: what the cut-off attempt recorded after its ``resumed``
    # event is recorded again when the answer is applied again.
    await add_run_event(session, run, "resumed_again", {"text": why})
    item.status = check(ItemStatus, item.status, ItemStatus.QUEUED)
    item.claimed_by_run = None
    item.updated_at = now(session)
    journal_run(session, run, bot.handle)
    notice = notices.resumed_again(bot.handle, run.id, run.hop, why)
    await delivery.post_notice(session, thread, notice)
    log_run(session, "run.resume_requeued", notice.text, run, bot, level="warning", detail={"item": item.id})
    wake_after_commit(session, [bot.id])
    return True
