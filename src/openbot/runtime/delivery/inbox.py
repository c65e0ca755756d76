"""Mailboxes: putting items in them, and humans acknowledging what they have read.

An item points at a message or a run and carries nothing of its own (invariant 2). A bot that
gets an item is woken once the transaction commits: enqueueing is the only way work reaches a
bot, so no caller has to remember to wake anyone.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import BindParameter, ColumnElement, Exists, Select, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import Forbidden, NotFound
from openbot.core.ids import new_id
from openbot.core.scheduling import ItemKind
from openbot.core.states import ItemStatus, check
from openbot.runtime.views import ItemView, item_view
from openbot.runtime.webhooks import outbox
from openbot.store import fast, inserts
from openbot.store.db import now, wake_after_commit
from openbot.store.journal import append_event
from openbot.store.models import Actor, InboxItem


async def enqueue(
    session: AsyncSession,
    actor: Actor,
    thread_id: str,
    *,
    kind: ItemKind,
    message_id: str | None = None,
    run_id: str | None = None,
) -> InboxItem:
    stamp = now(session)
    item = InboxItem(
        id=new_id("item"),
        actor_id=actor.id,
        thread_id=thread_id,
        kind=kind,
        message_id=message_id,
        run_id=run_id,
        status=ItemStatus.QUEUED,
        attempts=0,
        created_at=stamp,
        updated_at=stamp,
    )
    await inserts.insert(session, item)
    append_event(session, "inbox.updated", {"actor": actor.handle, "item": item_view(item)}, thread_id)
    if actor.kind == "bot":
        wake_after_commit(session, [actor.id])
    elif actor.kind == "external":  # its webhook delivery, written with the mail
        await outbox.record(session, actor, thread_id, kind, message_id, run_id)
    return item


async def announce(session: AsyncSession, items: Sequence[InboxItem]) -> None:
    """An ``inbox.updated`` event for each item that changed state (a question answered or
    cancelled with its run), so a client showing the inbox never has to poll it."""
    if not items:
        return
    owners = select(Actor.id, Actor.handle).where(Actor.id.in_({item.actor_id for item in items}))
    handles = {id_: handle for id_, handle in (await session.execute(owners)).all()}
    for item in items:
        data = {"actor": handles.get(item.actor_id, ""), "item": item_view(item)}
        append_event(session, "inbox.updated", data, item.thread_id)


def queued_mail_count(actor_id: str | BindParameter[str], thread_id: str | BindParameter[str]) -> Select[int]:
    """The number of message items queued for an actor in a thread, as a scalar select."""
    return (
        select(func.count())
        .select_from(InboxItem)
        .where(
            InboxItem.actor_id == actor_id,
            InboxItem.thread_id == thread_id,
            InboxItem.kind == ItemKind.MESSAGE,
            InboxItem.status == ItemStatus.QUEUED,
        )
    )


async def queued_mail(session: AsyncSession, actor_id: str, thread_id: str) -> int:
    return int(await session.scalar(queued_mail_count(actor_id, thread_id)) or 0)


async def has_mail(session: AsyncSession, bot_id: str) -> bool:
    """Whether the bot has anything queued at all (worth waking its worker for)."""
    return bool((await fast.execute(session, _HAS_MAIL, {"bot_id": bot_id}))[0][0])


def any_mail(actor_id: ColumnElement[str]) -> Exists:
    """Whether the actor has anything queued at all (for a bot: worth waking its worker for)."""
    return (
        select(InboxItem.id)
        .where(InboxItem.actor_id == actor_id, InboxItem.status == ItemStatus.QUEUED)
        .exists()
    )


async def ack_item(session: AsyncSession, item_id: str, *, owner: str | None = None) -> ItemView:
    """A human marks one item read. Bots' items are theirs to settle: acking one changes nothing.
    With ``owner`` (an actor token's handle) only that actor's own items may be acked."""
    item = await session.get(InboxItem, item_id, with_for_update=True)  # a racing thread delete: 404
    if item is None:
        raise NotFound(f"inbox item {item_id} not found")
    actor = await session.get(Actor, item.actor_id)
    if owner is not None and (actor is None or actor.handle != owner):
        raise Forbidden(f"inbox item {item_id} is not @{owner}'s", {"item_id": item_id, "actor": owner})
    if item.status == ItemStatus.QUEUED and actor is not None and actor.kind != "bot":
        item.status = check(ItemStatus, item.status, ItemStatus.DONE)
        item.updated_at = now(session)
        append_event(
            session, "inbox.updated", {"actor": actor.handle, "item": item_view(item)}, item.thread_id
        )
    return item_view(item)


async def ack_thread(session: AsyncSession, actor: Actor, thread_id: str) -> int:
    """Mark every queued message item of ``actor`` in a thread read; returns how many."""
    result = await session.execute(
        update(InboxItem)
        .where(
            InboxItem.actor_id == actor.id,
            InboxItem.thread_id == thread_id,
            InboxItem.status == ItemStatus.QUEUED,
            InboxItem.kind == ItemKind.MESSAGE,
        )
        .values(status=check(ItemStatus, ItemStatus.QUEUED, ItemStatus.DONE), updated_at=now(session))
    )
    count = int(getattr(result, "rowcount", 0) or 0)
    if count:
        append_event(
            session,
            "inbox.updated",
            {"actor": actor.handle, "thread_id": thread_id, "acked": count},
            thread_id,
        )
    return count


async def list_items(
    session: AsyncSession,
    actor: Actor,
    *,
    status: str | None,
    kind: str | None,
    thread_id: str | None,
    limit: int,
) -> list[ItemView]:
    stmt = select(InboxItem).where(InboxItem.actor_id == actor.id)
    if status:
        stmt = stmt.where(InboxItem.status == status)
    if kind:
        stmt = stmt.where(InboxItem.kind == kind)
    if thread_id:
        stmt = stmt.where(InboxItem.thread_id == thread_id)
    return [item_view(i) for i in await session.scalars(stmt.order_by(InboxItem.id).limit(limit))]


_HAS_MAIL = fast.Sql(select(any_mail(bindparam("bot_id"))))
