"""Finishing a run: write what the agent produced, fenced by the worker's lease (DESIGN §6).

running → waiting_human (the question goes to every human participant's mailbox, the thread is
parked for the bot), → failed (a notice says why), or → completed (the reply is posted, which may
hand off). Held hand-offs of the bot are released once its queue in the thread is empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.scheduling import ItemKind
from openbot.core.states import ItemStatus, RunStatus, check
from openbot.runtime import notices
from openbot.runtime.delivery.holds import Leftover, leftover_columns, release_holds
from openbot.runtime.delivery.inbox import enqueue
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.memory import pending
from openbot.runtime.memory.context import record
from openbot.runtime.runs.claim import Claim
from openbot.runtime.runs.events import (
    add_run_event,
    fence_statement,
    fenced_with,
    journal_run,
    log_run,
    move,
    save,
)
from openbot.store import fast
from openbot.store.db import dialect, now
from openbot.store.dialect import frees_only
from openbot.store.models import Actor, InboxItem, PreparedContext, Run, Thread, ThreadParticipant

_SETTLE = fast.Sql(
    update(InboxItem)
    .where(InboxItem.id.in_(bindparam("ids", expanding=True)), InboxItem.status == ItemStatus.PROCESSING)
    .values(status=bindparam("status"), updated_at=bindparam("stamp", type_=InboxItem.updated_at.type))
)

# The fence, with what the run leaves behind: whether its bot holds hand-offs in the thread and
# has mail queued anywhere (``holds.Leftover``), read in the same statement. Nothing the finish
# writes changes either, and what others write that could (a claim leaving mail queued) has
# committed before this read or waits for the finish (``Dialect.share_bot``, sent before it).
_FENCE = fence_statement(*leftover_columns(Run.bot_id.expression, Run.thread_id.expression), numbered=True)


@dataclass
class Outcome:
    """What a run produced; the runner fills it in and :func:`finish` writes it."""

    reply: str | None = None
    interrupt: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    context: PreparedContext | None = None  # what the first model call saw (fresh runs)


async def finish(session: AsyncSession, claim: Claim, outcome: Outcome, delivery: Delivery) -> bool:
    """Write a run's outcome (releasing the bot's held hand-offs once it may); returns whether
    the bot has mail queued still, so its worker should look again.

    The bot's claims wait for this transaction (``Dialect.share_bot``; SQLite serialises every
    writer anyway): a claim that found the bot at its ceiling because this run was still running
    has committed before the mail check below, which then sees the mail the claim left queued.
    Without it, mail posted while this transaction runs could be missed by both: the claim saw
    the ceiling, and the check ran before the mail was committed."""
    await dialect(session).share_bot(session, claim.bot_id)  # sent with the fence, before it
    run, bot, thread, row = await fenced_with(session, _FENCE, claim.run_id, claim.token, numbered=True)
    left = Leftover(held=bool(row.held), mail=bool(row.mail))
    run.input_tokens += outcome.input_tokens
    run.output_tokens += outcome.output_tokens
    run.model_calls += outcome.model_calls
    if outcome.context is not None:
        await record(session, outcome.context)
    if outcome.interrupt is not None:
        await _pause(session, run, bot, thread, claim.item_ids, outcome.interrupt)
        await save(session, run)
    elif outcome.error is None:
        await _complete(session, run, bot, thread, claim.item_ids, outcome.reply, delivery, left)
    else:
        await _fail(session, run, bot, thread, claim.item_ids, outcome.error, delivery)
        await save(session, run)
        if left.held:
            await release_holds(session, bot, thread.id)
    more = left.mail
    # The bot has room again: other processes wake it if it has mail, and look for nothing else
    # (bots this transaction gave mail to are named anyway).
    frees_only(session, [bot.id] if more else [])
    return more


async def _pause(
    session: AsyncSession,
    run: Run,
    bot: Actor,
    thread: Thread,
    items: Sequence[str],
    interrupt: dict[str, Any],
) -> None:
    move(run, RunStatus.WAITING_HUMAN)
    run.interrupt = interrupt
    await add_run_event(session, run, "interrupt", interrupt)
    await settle(session, items, ItemStatus.DONE, now(session))
    await _ask_humans(session, run, thread)
    journal_run(session, run, bot.handle)
    log_run(
        session,
        "run.waiting_human",
        f"@{bot.handle} is waiting for a human",
        run,
        bot,
        detail=interrupt,
    )


async def _fail(
    session: AsyncSession,
    run: Run,
    bot: Actor,
    thread: Thread,
    items: Sequence[str],
    error: dict[str, Any],
    delivery: Delivery,
) -> None:
    move(run, RunStatus.FAILED)
    run.error = error
    run.finished_at = now(session)
    await add_run_event(session, run, "error", error)
    await settle(session, items, ItemStatus.FAILED, run.finished_at)
    journal_run(session, run, bot.handle)
    await delivery.post_notice(session, thread, notices.run_failed(bot.handle, run.id, run.hop, error))
    log_run(
        session,
        "run.failed",
        f"@{bot.handle}'s run failed: {error.get('message')}",
        run,
        bot,
        level="error",
        detail=error,
    )


async def _complete(
    session: AsyncSession,
    run: Run,
    bot: Actor,
    thread: Thread,
    items: Sequence[str],
    reply: str | None,
    delivery: Delivery,
    left: Leftover,
) -> None:
    """Complete the run and post its reply.

    The post locks the thread's row (posts to one thread serialise, DESIGN §6) and runs of other
    bots finishing in the same thread wait on that lock: nothing is read after it but what the
    post itself reads (on PostgreSQL the writes before it go out with its first statement, and the
    writes after it with the commit: two round trips under the lock). The reply's id is
    drawn under the lock (message ids follow the order posts commit in a thread). Holds are
    released after the reply, and journalled after the run's own rows, as before: a hand-off the
    reply makes for real supersedes a held one to the same bot. The reply holds a hand-off only
    while the bot has mail queued in the thread, when no hold is released anyway."""
    move(run, RunStatus.COMPLETED)
    run.finished_at = now(session)
    await settle(session, items, ItemStatus.DONE, run.finished_at)
    # Owe a reflection (one upsert, nothing when the bot's memory is off): the durable debounce.
    await pending.schedule(session, bot.id, thread.id, next(iter(run.trigger_message_ids), None))
    await save(session, run)
    if reply:
        result = await delivery.post(session, thread, reply, sender=bot, hop=run.hop + 1, run_id=run.id)
        await add_run_event(session, run, "message", {"message_id": result.message.id})
    journal_run(session, run, bot.handle)
    log_run(
        session,
        "run.completed",
        f"@{bot.handle} completed a run",
        run,
        bot,
    )
    if left.held:
        await release_holds(session, bot, thread.id)


async def settle(session: AsyncSession, item_ids: Sequence[str], status: ItemStatus, stamp: datetime) -> None:
    """Settle the claim's items that are still processing, in one UPDATE."""
    target = check(ItemStatus, ItemStatus.PROCESSING, status)
    await fast.execute(session, _SETTLE, {"ids": list(item_ids), "status": target, "stamp": stamp})


async def _ask_humans(session: AsyncSession, run: Run, thread: Thread) -> None:
    """A question item for every human and external participant of the thread."""
    humans = await session.scalars(
        select(Actor)
        .join(ThreadParticipant, ThreadParticipant.actor_id == Actor.id)
        .where(ThreadParticipant.thread_id == thread.id, Actor.kind != "bot", Actor.deleted.is_(False))
    )
    for human in humans:
        await enqueue(session, human, thread.id, kind=ItemKind.QUESTION, run_id=run.id)
