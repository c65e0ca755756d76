"""Disposals: triggers admitted to a bot's mailbox and then dropped without being served (invariant 13).

Every drop writes one row in the dropping transaction — shed by the bounded mailbox, demoted as
stale, collapsed into one run on recovery, exhausted its attempts, cancelled… — with the numbers a
person needs to understand it: the trigger's age, the bound it was measured against, the queue
depth, how many triggers collapsed. An activity row goes with it, so the Activity view and a
thread's timeline show the drop where a person looks for "why was my message dropped?".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from typing_extensions import TypedDict

from openbot.core.ids import new_id
from openbot.core.scheduling import ItemKind
from openbot.core.states import ItemStatus, check
from openbot.runtime.scope import member_threads
from openbot.runtime.views import iso
from openbot.store.db import now
from openbot.store.journal import log_activity
from openbot.store.models import Actor, Disposal, InboxItem


class Reason(StrEnum):
    SHED = "shed"
    STALE = "stale"
    COLLAPSED = "collapsed"
    CANCELLED = "cancelled"
    BOT_DISABLED = "bot_disabled"
    THREAD_DELETED = "thread_deleted"
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"


_SUMMARY = {
    Reason.SHED: "shed {n} trigger(s) for @{bot}: its mailbox was full ({depth} queued, bound {bound:g})",
    Reason.STALE: "demoted {n} trigger(s) for @{bot} to context: {age:.0f} s old, over the {bound:g} s bound",
    Reason.COLLAPSED: "collapsed a backlog of {n} trigger(s) for @{bot} into one run",
    Reason.CANCELLED: "cancelled {n} trigger(s) for @{bot}",
    Reason.BOT_DISABLED: "dropped {n} trigger(s): @{bot} is disabled",
    Reason.THREAD_DELETED: "dropped {n} trigger(s) for @{bot}: the thread was deleted",
    Reason.ATTEMPTS_EXHAUSTED: "dropped {n} trigger(s) for @{bot} after {bound:g} failed attempt(s)",
}


class DisposalView(TypedDict):
    id: str
    bot: str
    thread_id: str
    message_ids: list[str]
    reason: str
    trigger_age_s: float | None
    bound: float | None
    queue_depth: int | None
    collapsed_count: int | None
    created_at: str | None


@dataclass(frozen=True)
class DisposalFilter:
    bot_id: str | None = None
    thread_id: str | None = None
    reason: str | None = None
    limit: int = 200
    member: str | None = None  # an actor token's handle: the disposals in its threads only


def record_disposal(
    session: AsyncSession,
    *,
    bot: Actor,
    thread_id: str,
    reason: Reason,
    message_ids: Sequence[str],
    item_ids: Sequence[str] = (),
    trigger_age_s: float | None = None,
    bound: float | None = None,
    queue_depth: int | None = None,
    collapsed_count: int | None = None,
    run_id: str | None = None,
) -> Disposal:
    """Add one disposal row (and its activity row) to the caller's transaction."""
    row = Disposal(
        id=new_id("dsp"),
        bot_id=bot.id,
        thread_id=thread_id,
        message_ids=list(message_ids),
        item_ids=list(item_ids),
        reason=str(reason),
        trigger_age_s=None if trigger_age_s is None else round(trigger_age_s, 3),
        bound=bound,
        queue_depth=queue_depth,
        collapsed_count=collapsed_count,
        run_id=run_id,
        created_at=now(session),
    )
    session.add(row)
    summary = _SUMMARY[reason].format(
        n=len(message_ids) or len(item_ids),
        bot=bot.handle,
        depth=queue_depth or 0,
        bound=bound or 0,
        age=trigger_age_s or 0,
    )
    log_activity(
        session,
        f"disposal.{reason}",
        summary,
        level="warning",
        thread_id=thread_id,
        actor_id=bot.id,
        actor_handle=bot.handle,
        run_id=run_id,
        message_id=message_ids[0] if message_ids else None,
        detail=disposal_view(row, bot.handle),  # type: ignore[arg-type]  # a TypedDict is a dict
    )
    return row


def disposal_view(row: Disposal, bot_handle: str) -> DisposalView:
    return {
        "id": row.id,
        "bot": bot_handle,
        "thread_id": row.thread_id,
        "message_ids": list(row.message_ids),
        "reason": row.reason,
        "trigger_age_s": row.trigger_age_s,
        "bound": row.bound,
        "queue_depth": row.queue_depth,
        "collapsed_count": row.collapsed_count,
        "created_at": iso(row.created_at),
    }


async def list_disposals(session: AsyncSession, where: DisposalFilter) -> list[DisposalView]:
    """Disposals newest first, with their bots' handles."""
    stmt = select(Disposal, Actor.handle).outerjoin(Actor, Actor.id == Disposal.bot_id)
    if where.bot_id is not None:
        stmt = stmt.where(Disposal.bot_id == where.bot_id)
    if where.thread_id is not None:
        stmt = stmt.where(Disposal.thread_id == where.thread_id)
    if where.reason is not None:
        stmt = stmt.where(Disposal.reason == where.reason)
    if where.member is not None:
        stmt = stmt.where(Disposal.thread_id.in_(member_threads(where.member)))
    rows = await session.execute(stmt.order_by(Disposal.id.desc()).limit(where.limit))
    return [disposal_view(row, handle or "") for row, handle in rows]


async def disposal_of(session: AsyncSession, bot_id: str, thread_id: str, message_id: str) -> Disposal | None:
    """The newest disposal of this bot's trigger on this message, if it was dropped (for ``why``)."""
    rows = await session.scalars(
        select(Disposal)
        .where(Disposal.bot_id == bot_id, Disposal.thread_id == thread_id)
        .order_by(Disposal.id.desc())
    )
    return next((row for row in rows if message_id in row.message_ids), None)


_QUEUED_MAIL = (
    select(InboxItem, Actor)
    .join(Actor, Actor.id == InboxItem.actor_id)
    .where(InboxItem.status == ItemStatus.QUEUED, InboxItem.kind == ItemKind.MESSAGE, Actor.kind == "bot")
    .order_by(InboxItem.id)
)


async def dispose_queued(
    session: AsyncSession, reason: Reason, *, thread_id: str | None = None, bot_id: str | None = None
) -> int:
    """Record the queued bot mail of a thread (or of a bot) that will never be served, one disposal
    per bot and thread; returns how many items. With ``bot_id`` the items are also cancelled; a
    thread's items go with the thread (its delete cascades), so they are left as they are."""
    stmt = _QUEUED_MAIL
    if thread_id is not None:
        stmt = stmt.where(InboxItem.thread_id == thread_id)
    if bot_id is not None:
        stmt = stmt.where(InboxItem.actor_id == bot_id)
    groups: dict[tuple[str, str], tuple[Actor, list[InboxItem]]] = {}
    for item, bot in (await session.execute(stmt)).all():
        groups.setdefault((bot.id, item.thread_id), (bot, []))[1].append(item)
    stamp = now(session)
    for (_bot_id, thread), (bot, items) in groups.items():
        if bot_id is not None:
            for item in items:
                item.status = check(ItemStatus, item.status, ItemStatus.CANCELLED)
                item.updated_at = stamp
        record_disposal(
            session,
            bot=bot,
            thread_id=thread,
            reason=reason,
            message_ids=[item.message_id or "" for item in items],
            item_ids=[item.id for item in items],
            trigger_age_s=max((stamp - item.created_at).total_seconds() for item in items),
            queue_depth=len(items),
        )
    return sum(len(items) for _bot, items in groups.values())
