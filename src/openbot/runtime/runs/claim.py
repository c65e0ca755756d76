"""Claiming: turn a bot's next batch of mail into a running run, in one transaction (DESIGN §6).

The caller holds a global run slot. The bot is locked first (a no-op on SQLite, whose writers
are serialised already), so two processes claiming for one bot serialise here and the bot's
ceiling holds across them (invariant 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.ids import new_id
from openbot.core.scheduling import Batch, ItemKind, QueuedItem, pick
from openbot.core.states import ACTIVE_RUNS, IN_FLIGHT_RUNS, ItemStatus, RunStatus, check
from openbot.runtime.governor.admission import QUEUE, Admission, note_collapse, queue_of, retire
from openbot.runtime.governor.disposals import Reason, dispose_queued
from openbot.runtime.runs.events import journal_run, log_run, move
from openbot.store import fast, inserts
from openbot.store.columns import Columns
from openbot.store.db import dialect, now
from openbot.store.models import Actor, BotProfile, InboxItem, Run

# Built once (building a statement costs more than SQLite takes to run it); a claim binds the bot.
# The bot, its profile and its active runs (one row each, or one row of NULLs): one read.
_ACTOR = Columns(Actor, "bot_")
_PROFILE = Columns(BotProfile, "profile_")
_BOT = fast.Sql(
    select(*_ACTOR.columns, *_PROFILE.columns)
    .add_columns(Run.thread_id.label("run_thread"), Run.status.label("run_status"))
    .select_from(Actor)
    .join(BotProfile, BotProfile.actor_id == Actor.id)
    .outerjoin(Run, (Run.bot_id == Actor.id) & Run.status.in_(ACTIVE_RUNS))
    .where(Actor.id == bindparam("bot_id"))
)
# The batch's items become the run's: one UPDATE (the claim checked each is still queued).
_LEASE = fast.Sql(
    update(InboxItem)
    .where(InboxItem.id.in_(bindparam("ids", expanding=True)), InboxItem.status == ItemStatus.QUEUED)
    .values(
        status=ItemStatus.PROCESSING,
        attempts=InboxItem.attempts + 1,
        claimed_by_run=bindparam("run_id"),
        updated_at=bindparam("stamp", type_=InboxItem.updated_at.type),
    )
)
_CANCEL_ONE = fast.Sql(
    update(InboxItem)
    .where(InboxItem.id == bindparam("item_id"))
    .values(status=ItemStatus.CANCELLED, updated_at=bindparam("stamp", type_=InboxItem.updated_at.type))
)


class ClaimPaused(Exception):
    """A worker's claim rolled back: the system was paused while it was made (``ActorSystem.claim``)."""


@dataclass(frozen=True)
class Claim:
    run_id: str
    bot_id: str
    bot_handle: str
    thread_id: str
    token: int
    resume: bool
    item_ids: tuple[str, ...]
    trigger_ids: tuple[str, ...]
    hop: int
    at_ceiling: bool = False  # this claim filled the bot's last free thread


async def claim_next(
    session: AsyncSession, bot_id: str, owner: str, lease_seconds: float, admission: Admission = Admission()
) -> Claim | None:
    """Retire what the governor drops, pick the bot's next batch and turn it into a running run,
    or return None."""
    await dialect(session).lock_bot(session, bot_id)
    # The bot and its queue, read together (on PostgreSQL one round trip, with the lock before).
    ids = {"bot_id": bot_id}
    rows, queue = await fast.execute_all(session, [(_BOT, ids), (QUEUE, ids)])
    if rows and rows[0].bot_deleted and queue:
        # Mail that a post racing the bot's deletion queued after it (PostgreSQL): never served.
        await dispose_queued(session, Reason.BOT_DISABLED, bot_id=bot_id)
        return None
    if not rows or rows[0].bot_deleted or not rows[0].bot_enabled:
        return None
    bot, profile = _ACTOR.of(rows[0]), _PROFILE.of(rows[0])
    ceiling = max(1, profile.max_parallel_threads)
    active = [(row.run_thread, row.run_status) for row in rows if row.run_thread is not None]
    in_flight = frozenset(t for t, s in active if s in IN_FLIGHT_RUNS)
    if len(in_flight) >= ceiling:
        return None
    parked = frozenset(t for t, s in active if s == RunStatus.WAITING_HUMAN)
    queued = await retire(session, bot, profile, queue_of(queue), admission, now(session))
    items, hops = [row.item for row in queued], {row.item.id: row.hop for row in queued}
    batch = pick(
        [QueuedItem(i.id, ItemKind(i.kind), i.thread_id, i.created_at.timestamp(), i.run_id) for i in items],
        parked,
        in_flight,
    )
    if batch is None:
        return None
    by_id = {i.id: i for i in items}
    taken = [by_id[q.id] for q in batch.items]
    run = await _start(session, bot, batch, taken, hops)
    if run is None:
        return None
    await _lease(session, run, taken, owner, lease_seconds, new=not batch.is_resume)
    if not batch.is_resume:
        note_collapse(session, bot, run.id, taken, admission, now(session))
    journal_run(session, run, bot.handle)
    _log_claim(session, bot, run, taken, batch.is_resume)
    return Claim(
        run_id=run.id,
        bot_id=bot.id,
        bot_handle=bot.handle,
        thread_id=run.thread_id,
        token=run.lease_token,
        resume=batch.is_resume,
        item_ids=tuple(i.id for i in taken),
        trigger_ids=tuple(run.trigger_message_ids),
        hop=run.hop,
        at_ceiling=len(in_flight) + 1 >= ceiling,
    )


async def _lease(
    session: AsyncSession, run: Run, items: Sequence[InboxItem], owner: str, seconds: float, *, new: bool
) -> None:
    """The run is ours until the lease expires (a new token fences off any previous owner).

    A new run is written here, leased; a resumed one is the session's and is flushed with it."""
    stamp = now(session)
    run.lease_owner = owner
    run.lease_token += 1
    run.lease_expires_at = stamp + timedelta(seconds=seconds)
    if new:
        await inserts.insert(session, run)
    for item in items:
        check(ItemStatus, item.status, ItemStatus.PROCESSING)
    await fast.execute(session, _LEASE, {"ids": [i.id for i in items], "run_id": run.id, "stamp": stamp})


def _log_claim(session: AsyncSession, bot: Actor, run: Run, items: Sequence[InboxItem], resume: bool) -> None:
    verb = "resumed" if resume else "started"
    log_run(
        session,
        f"run.{verb}",
        f"@{bot.handle} {verb} a run on {len(items)} item(s)",
        run,
        bot,
        detail={"items": [i.id for i in items], "triggers": run.trigger_message_ids},
    )


async def _start(
    session: AsyncSession, bot: Actor, batch: Batch, items: Sequence[InboxItem], hops: dict[str, int | None]
) -> Run | None:
    """The run for a batch: the paused run a resume item points at, or a new one."""
    stamp = now(session)
    if batch.is_resume:  # locked: a cancel that came first is seen, one that comes later waits
        run = await session.get(Run, items[0].run_id, with_for_update=True)
        if run is None or run.status != RunStatus.WAITING_HUMAN:
            check(ItemStatus, items[0].status, ItemStatus.CANCELLED)
            await fast.execute(session, _CANCEL_ONE, {"item_id": items[0].id, "stamp": stamp})
            return None
        move(run, RunStatus.RUNNING)
        return run
    return _new_run(bot, batch, items, hops, stamp)


def _new_run(
    bot: Actor, batch: Batch, items: Sequence[InboxItem], hops: dict[str, int | None], stamp: datetime
) -> Run:
    """A new run is born running: the worker holds a slot for it already. Its hop is its triggers' highest."""
    trigger_ids = [item.message_id for item in items if item.message_id]
    found = [hop for item in items if item.message_id and (hop := hops.get(item.id)) is not None]
    return Run(
        id=new_id("run"),
        bot_id=bot.id,
        thread_id=batch.thread_id,
        status=RunStatus.RUNNING,
        trigger_message_ids=trigger_ids,
        hop=max(found, default=0),
        input_tokens=0,
        output_tokens=0,
        model_calls=0,
        lease_token=0,
        created_at=stamp,
        started_at=stamp,
    )
