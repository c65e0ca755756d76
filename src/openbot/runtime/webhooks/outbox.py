"""Deliveries as rows: recorded with the mail, listed, retried, and the body each attempt POSTs.

A delivery is written in the transaction that put the item in the external actor's mailbox
(``delivery.inbox.enqueue``), so a delivery exists exactly when its mail does and a restart finds
every pending one. The loop is told after commit (``Database.webhook_listeners``).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11

from openbot.core.errors import Conflict, NotFound
from openbot.core.ids import new_id
from openbot.core.scheduling import ItemKind
from openbot.runtime import threads
from openbot.runtime.views import iso, message_view, run_view
from openbot.store.db import after_commit, database_of, now
from openbot.store.journal import append_event, log_activity
from openbot.store.models import Actor, ExternalProfile, Message, Run, Thread, WebhookDelivery

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
STATUSES = (PENDING, DELIVERED, FAILED)
_WAKE = "openbot_webhooks_woken"


class DeliveryView(TypedDict):
    id: str
    actor: str
    type: str
    thread_id: str
    status: str
    attempts: int
    last_error: str | None
    next_attempt_at: str | None
    message_id: str | None
    run_id: str | None
    created_at: str | None
    updated_at: str | None


def delivery_view(row: WebhookDelivery, handle: str) -> DeliveryView:
    return {
        "id": row.id,
        "actor": handle,
        "type": row.type,
        "thread_id": row.thread_id,
        "status": row.status,
        "attempts": row.attempts,
        "last_error": row.last_error,
        "next_attempt_at": iso(row.next_attempt_at),
        "message_id": row.message_id,
        "run_id": row.run_id,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
    }


async def record(
    session: AsyncSession, actor: Actor, thread_id: str, kind: str, message_id: str | None, run_id: str | None
) -> WebhookDelivery | None:
    """A delivery for an item that reached an external actor's mailbox (none without a URL)."""
    if kind == ItemKind.RESUME:
        return None
    profile = await session.get(ExternalProfile, actor.id)
    if profile is None or not profile.webhook_url:
        return None
    if message_id is None and run_id is not None:  # a question: the message the bot was answering
        run = await session.get(Run, run_id)
        triggers = run.trigger_message_ids if run is not None else None
        message_id = triggers[-1] if triggers else None
    stamp = now(session)
    row = WebhookDelivery(
        id=new_id("whd"),
        actor_id=actor.id,
        thread_id=thread_id,
        type="question.created" if kind == ItemKind.QUESTION else "message.created",
        message_id=message_id,
        run_id=run_id,
        status=PENDING,
        attempts=0,
        last_error=None,
        next_attempt_at=stamp,
        created_at=stamp,
        updated_at=stamp,
    )
    session.add(row)
    _wake_after_commit(session)
    return row


def _wake_after_commit(session: AsyncSession) -> None:
    info = session.sync_session.info
    if info.get(_WAKE):
        return
    info[_WAKE] = True
    database = database_of(session)

    def wake() -> None:
        info.pop(_WAKE, None)
        for listener in database.webhook_listeners:
            listener()

    after_commit(session, wake)


def changed(session: AsyncSession, row: WebhookDelivery, handle: str, *, event: str, summary: str) -> None:
    """Journal (``webhook.updated``, for live views) and log a delivery's change."""
    view = delivery_view(row, handle)
    append_event(session, "webhook.updated", view, row.thread_id)
    log_activity(
        session,
        event,
        summary,
        level="warning" if row.status == FAILED or row.last_error else "info",
        thread_id=row.thread_id,
        actor_id=row.actor_id,
        actor_handle=handle,
        run_id=row.run_id,
        message_id=row.message_id,
        detail={"delivery_id": row.id, "attempts": row.attempts, "last_error": row.last_error},
    )


async def list_deliveries(
    session: AsyncSession, *, actor: str | None, status: str | None, limit: int
) -> list[DeliveryView]:
    """Newest first."""
    stmt = select(WebhookDelivery, Actor.handle).join(Actor, Actor.id == WebhookDelivery.actor_id)
    if actor:
        stmt = stmt.where(Actor.handle == actor)
    if status:
        stmt = stmt.where(WebhookDelivery.status == status)
    rows = await session.execute(stmt.order_by(WebhookDelivery.id.desc()).limit(limit))
    return [delivery_view(d, h) for d, h in rows]


async def retry(session: AsyncSession, delivery_id: str) -> DeliveryView:
    """Make a failed (or waiting) delivery due now: one more attempt, whatever its count."""
    row = await session.get(WebhookDelivery, delivery_id)
    if row is None:
        raise NotFound(f"delivery {delivery_id} not found", {"delivery_id": delivery_id})
    if row.status == DELIVERED:
        raise Conflict(f"delivery {delivery_id} was delivered already", {"status": row.status})
    actor = await session.get(Actor, row.actor_id)
    handle = actor.handle if actor else ""
    row.status = PENDING
    row.next_attempt_at = row.updated_at = now(session)
    changed(session, row, handle, event="webhook.retry_requested", summary=f"delivery to @{handle} retried")
    _wake_after_commit(session)
    return delivery_view(row, handle)


async def body(session: AsyncSession, row: WebhookDelivery) -> dict[str, Any] | None:
    """What an attempt POSTs (``{"type", "delivery_id", "thread", "message", "run"?}``), read
    fresh; None when the thread is gone. A question's ``message`` is the one the bot was answering."""
    thread = await session.get(Thread, row.thread_id)
    if thread is None:
        return None
    out: dict[str, Any] = {"type": row.type, "delivery_id": row.id}
    out["thread"] = await threads.view(session, thread)
    message_id = row.message_id
    if row.run_id is not None:
        runs = select(Run, Actor.handle).join(Actor, Actor.id == Run.bot_id)
        found = (await session.execute(runs.where(Run.id == row.run_id))).first()
        if found is not None:
            out["run"] = run_view(found[0], found[1])
            triggers = found[0].trigger_message_ids
            message_id = message_id or (triggers[-1] if triggers else None)
    out["message"] = None
    if message_id is not None:
        messages = select(Message, Actor).outerjoin(Actor, Actor.id == Message.sender_id)
        pair = (await session.execute(messages.where(Message.id == message_id))).first()
        if pair is not None:
            out["message"] = message_view(pair[0], pair[1])
    return out


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
