"""Admission at claim time: retire stale and overflowing triggers, note collapsed backlogs (DESIGN §7).

``runs.claim`` reads the bot's queue once; :func:`retire` applies ``core.governor`` to it and, only
when something is dropped, settles those items and writes their disposals (one per thread and
reason) in the claim's transaction. The common case — nothing stale, the queue under its bound —
costs no statement at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.governor import Mail, govern, run_time_limit, stale_bound
from openbot.core.scheduling import ItemKind
from openbot.core.states import ItemStatus, check
from openbot.runtime.delivery.holds import release_holds
from openbot.runtime.governor.disposals import Reason, record_disposal
from openbot.store import fast, inserts
from openbot.store.models import Actor, BotProfile, InboxItem, Message, Thread

MAX_SCAN = 1000  # queued items read per claim (a bot's max_queued is at most this)
# Built once; a claim binds the bot. Each item (a record) with its message's hop and mentions and
# its thread's kind.
QUEUE = fast.Sql(  # a bot's queued items, oldest first, with what the governor needs (binds bot_id)
    select(
        *inserts.table_of(InboxItem).columns, Message.hop, Message.mentions, Thread.kind.label("thread_kind")
    )
    .join(Thread, Thread.id == InboxItem.thread_id)
    .outerjoin(Message, Message.id == InboxItem.message_id)
    .where(InboxItem.actor_id == bindparam("bot_id"), InboxItem.status == ItemStatus.QUEUED)
    .order_by(InboxItem.id)
    .limit(MAX_SCAN)
)
_CANCEL = fast.Sql(
    update(InboxItem)
    .where(InboxItem.id.in_(bindparam("ids", expanding=True)), InboxItem.status == ItemStatus.QUEUED)
    .values(status=ItemStatus.CANCELLED, updated_at=bindparam("stamp", type_=InboxItem.updated_at.type))
)


@dataclass(frozen=True)
class Admission:
    """The install's bounds a claim applies (from settings; defaults for direct callers)."""

    stale_seconds: float = 300.0
    run_limit: float = 600.0
    #: Mail that entered the queue before this (the process's start) is a recovered backlog.
    backlog_before: datetime | None = None


@dataclass(frozen=True)
class QueuedRow:
    """A queued item with what the governor needs of its thread and message."""

    item: InboxItem  # a record with the item's attributes, as read (read only)
    hop: int | None
    channel: bool
    mentions: Sequence[str]


async def read_queue(session: AsyncSession, bot_id: str) -> list[QueuedRow]:
    """The bot's queued items, oldest first, each with its message's hop and mentions (None and
    none for run items) and whether its thread is a channel: one read."""
    return queue_of(await fast.execute(session, QUEUE, {"bot_id": bot_id}))


def queue_of(loaded: Sequence[Any]) -> list[QueuedRow]:
    """The rows :data:`QUEUE` read, as queued rows."""
    return [QueuedRow(row, row.hop, row.thread_kind == "channel", row.mentions or ()) for row in loaded]


async def retire(
    session: AsyncSession,
    bot: Actor,
    profile: BotProfile,
    rows: Sequence[QueuedRow],
    admission: Admission,
    stamp: datetime,
) -> list[QueuedRow]:
    """Drop what the governor retires (with disposals); return the rows still queued, oldest first."""
    bound = stale_bound(admission.stale_seconds, run_time_limit(admission.run_limit, profile.model_settings))
    mail = [
        Mail(
            id=row.item.id,
            kind=ItemKind(row.item.kind),
            thread_id=row.item.thread_id,
            channel=row.channel,
            mentioned=bot.handle in row.mentions,
            age_s=(stamp - row.item.created_at).total_seconds(),
        )
        for row in rows
    ]
    verdict = govern(mail, max_queued=profile.max_queued, stale_after=bound)
    if not verdict.dropped:
        return list(rows)
    by_id = {row.item.id: row.item for row in rows}
    await _dispose(session, bot, verdict.stale, by_id, stamp, Reason.STALE, bound=bound, depth=verdict.depth)
    await _dispose(
        session, bot, verdict.shed, by_id, stamp, Reason.SHED, bound=profile.max_queued, depth=verdict.depth
    )
    return [row for row in rows if row.item.id not in verdict.dropped]


async def _dispose(
    session: AsyncSession,
    bot: Actor,
    dropped: Sequence[Mail],
    items: dict[str, InboxItem],
    stamp: datetime,
    reason: Reason,
    *,
    bound: float,
    depth: int,
) -> None:
    """Cancel the dropped items and write one disposal per thread."""
    for thread_id, group in groupby(sorted(dropped, key=lambda m: m.thread_id), key=lambda m: m.thread_id):
        mails = list(group)
        for mail in mails:
            check(ItemStatus, items[mail.id].status, ItemStatus.CANCELLED)
        await fast.execute(session, _CANCEL, {"ids": [m.id for m in mails], "stamp": stamp})
        await release_holds(session, bot, thread_id)  # if that was its last mail there (invariant 8)
        record_disposal(
            session,
            bot=bot,
            thread_id=thread_id,
            reason=reason,
            message_ids=[items[m.id].message_id or "" for m in mails],
            item_ids=[m.id for m in mails],
            trigger_age_s=max(m.age_s for m in mails),
            bound=float(bound),
            queue_depth=depth,
        )


def note_collapse(
    session: AsyncSession,
    bot: Actor,
    run_id: str,
    items: Sequence[InboxItem],
    admission: Admission,
    stamp: datetime,
) -> None:
    """A recovered backlog (mail re-queued by recovery, or queued before this process started)
    of several triggers in one thread became one run: record how many collapsed into it. The
    items are as the claim read them, before it leased them: an item attempted before has
    ``attempts`` above 0."""
    messages = [item for item in items if item.kind == ItemKind.MESSAGE]
    if len(messages) < 2:
        return
    before = admission.backlog_before
    if not any(item.attempts > 0 or (before is not None and item.created_at < before) for item in messages):
        return
    oldest = min(item.created_at for item in messages)
    record_disposal(
        session,
        bot=bot,
        thread_id=messages[0].thread_id,
        reason=Reason.COLLAPSED,
        message_ids=[item.message_id or "" for item in messages],
        item_ids=[item.id for item in messages],
        trigger_age_s=(stamp - oldest).total_seconds(),
        collapsed_count=len(messages),
        run_id=run_id,
    )
