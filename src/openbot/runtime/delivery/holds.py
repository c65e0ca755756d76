"""Held hand-offs (invariant 8): a bot that hands off while it still has mail in the thread.

The hand-off is recorded instead of delivered, and released — enqueued for its target — once
the sender's mail in that thread is handled, however it ends: answered by a run
(:func:`after_run`), its run cancelled or failed from outside, the mail disposed of by the
governor (:func:`release_holds`), or at recovery (:func:`release_all`). A later real hand-off to
the same target supersedes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Label, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.ids import new_id
from openbot.core.scheduling import ItemKind
from openbot.core.states import ACTIVE_RUNS, HoldStatus, ItemStatus
from openbot.runtime import notices
from openbot.runtime.delivery.inbox import any_mail, enqueue
from openbot.store import fast
from openbot.store.db import now
from openbot.store.journal import log_activity
from openbot.store.models import Actor, HeldHandoff, InboxItem, Message, Run


async def supersede(session: AsyncSession, thread_id: str, sender_id: str, target_id: str) -> None:
    """Only the latest hand-off of a target by this sender in this thread counts."""
    await session.execute(
        update(HeldHandoff)
        .where(
            HeldHandoff.thread_id == thread_id,
            HeldHandoff.sender_id == sender_id,
            HeldHandoff.target_id == target_id,
            HeldHandoff.status == HoldStatus.PENDING,
        )
        .values(status=HoldStatus.SUPERSEDED)
    )


async def hold(
    session: AsyncSession, sender: Actor, targets: list[Actor], message: Message
) -> notices.Notice:
    """Record the held hand-offs of ``message``; returns the notice to post in the thread."""
    for target in targets:
        await supersede(session, message.thread_id, sender.id, target.id)
        session.add(
            HeldHandoff(
                id=new_id("hold"),
                thread_id=message.thread_id,
                sender_id=sender.id,
                target_id=target.id,
                message_id=message.id,
                status=HoldStatus.PENDING,
                created_at=now(session),
            )
        )
    handles = [t.handle for t in targets]
    log_activity(
        session,
        "message.handoff_held",
        f"@{sender.handle} still has mail in this thread: hand-off to {notices.handles(handles)} held",
        thread_id=message.thread_id,
        actor_id=sender.id,
        actor_handle=sender.handle,
        message_id=message.id,
        detail={"targets": handles},
    )
    return notices.handoff_held(sender.handle, handles, message.id, message.hop)


def _held_here(
    sender_id: ColumnElement[str], thread_id: ColumnElement[str]
) -> tuple[ColumnElement[bool], ...]:
    """The sender's pending holds in the thread (ids as bound values or columns of a wider read)."""
    return (
        HeldHandoff.thread_id == thread_id,
        HeldHandoff.sender_id == sender_id,
        HeldHandoff.status == HoldStatus.PENDING,
    )


_PENDING = select(HeldHandoff).where(*_held_here(bindparam("sender_id"), bindparam("thread_id")))
# The sender is not done in the thread: mail queued or claimed, or a run not ended (one waiting
# for a person has settled its mail, yet its answer may still hand off).
_UNHANDLED = select(
    select(InboxItem.id)
    .where(
        InboxItem.actor_id == bindparam("sender_id"),
        InboxItem.thread_id == bindparam("thread_id"),
        InboxItem.kind == ItemKind.MESSAGE,
        InboxItem.status.in_((ItemStatus.QUEUED, ItemStatus.PROCESSING)),
    )
    .exists()
    | select(Run.id)
    .where(
        Run.bot_id == bindparam("sender_id"),
        Run.thread_id == bindparam("thread_id"),
        Run.status.in_(ACTIVE_RUNS),
    )
    .exists()
)


@dataclass(frozen=True)
class Leftover:
    """What a finishing run leaves behind: hand-offs its bot holds in the thread, mail queued."""

    held: bool
    mail: bool  # anywhere: the bot's worker should look again


def leftover_columns(
    bot_id: ColumnElement[str], thread_id: ColumnElement[str]
) -> tuple[Label[bool], Label[bool]]:
    """:class:`Leftover`'s two columns: whether the bot holds hand-offs in the thread, and whether
    it has mail queued anywhere (worth waking its worker for). The ids are bound values, or columns
    of the read they go into (a finish reads them with its fence: ``runs.outcome``)."""
    held = select(HeldHandoff.id).where(*_held_here(bot_id, thread_id)).exists()
    return held.label("held"), any_mail(bot_id).label("mail")


# After a run, in one read.
_AFTER_RUN = fast.Sql(select(*leftover_columns(bindparam("sender_id"), bindparam("thread_id"))))


async def leftover(session: AsyncSession, bot_id: str, thread_id: str) -> Leftover:
    row = (await fast.execute(session, _AFTER_RUN, {"thread_id": thread_id, "sender_id": bot_id}))[0]
    return Leftover(held=bool(row.held), mail=bool(row.mail))


async def after_run(session: AsyncSession, bot: Actor, thread_id: str) -> bool:
    """Release the bot's holds in the thread if its queue there is empty; returns whether the bot
    still has mail queued (its worker should look again)."""
    left = await leftover(session, bot.id, thread_id)
    if left.held:
        await release_holds(session, bot, thread_id)
    return left.mail


async def release_holds(session: AsyncSession, bot: Actor, thread_id: str) -> list[str]:
    """Deliver the sender's pending holds in a thread once none of its mail there is queued or
    claimed and none of its runs there is still going (``_UNHANDLED``). Returns the ids of the bots
    woken. Called at a run's end when :func:`after_run` found holds, when a run is ended from
    outside or mail is disposed of, and at recovery.
    """
    ids = {"thread_id": thread_id, "sender_id": bot.id}
    holds = list(await session.scalars(_PENDING, ids))
    if not holds or await session.scalar(_UNHANDLED, ids):
        return []
    woken: list[str] = []
    for held in holds:
        target = await session.get(Actor, held.target_id)
        held.status = HoldStatus.RELEASED
        if target is None or target.deleted or not target.enabled:
            continue
        item = await enqueue(session, target, thread_id, kind=ItemKind.MESSAGE, message_id=held.message_id)
        woken.append(target.id)
        log_activity(
            session,
            "inbox.hold_released",
            f"held hand-off from @{bot.handle} delivered to @{target.handle}",
            thread_id=thread_id,
            actor_id=target.id,
            actor_handle=target.handle,
            item_id=item.id,
            message_id=held.message_id,
        )
    return woken


async def release_all(session: AsyncSession) -> list[str]:
    """Recovery: release every pending hold whose sender has no mail left in its thread."""
    pending = (
        await session.execute(
            select(HeldHandoff.sender_id, HeldHandoff.thread_id)
            .distinct()
            .where(HeldHandoff.status == HoldStatus.PENDING)
        )
    ).all()
    woken: list[str] = []
    for sender_id, thread_id in pending:
        sender = await session.get(Actor, sender_id)
        if sender is not None:
            woken += await release_holds(session, sender, thread_id)
    return woken
