"""Threads, messages and inboxes."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Response
from sqlalchemy import select, update

from openbot.api.deps import RuntimeDep
from openbot.api.schemas import InboxAck, MessageCreate, ThreadCreate
from openbot.core.errors import InvalidArgument, NotFound
from openbot.runtime import threads
from openbot.runtime.team import get_actor
from openbot.store.journal import append_event, now
from openbot.store.models import ACTIVE_RUN_STATUSES, Actor, InboxItem, Run, Thread
from openbot.store.views import item_view

router = APIRouter()


@router.post("/threads", status_code=201)
async def create_thread(rt: RuntimeDep, body: ThreadCreate) -> dict[str, Any]:
    async with rt.db.transaction() as s:
        thread = await threads.create_thread(s, body.model_dump(exclude_unset=True))
        return await threads.view(s, thread)


@router.get("/threads")
async def list_threads(
    rt: RuntimeDep,
    q: str | None = None,
    actor: str = "you",
    limit: int = Query(200, ge=1, le=1000),
) -> dict[str, Any]:
    async with rt.db.read() as s:
        who = await s.scalar(select(Actor).where(Actor.handle == actor, Actor.deleted.is_(False)))
        stmt = select(Thread)
        if q:
            stmt = stmt.where(Thread.title.ilike(f"%{q}%"))
        stmt = stmt.order_by(Thread.last_message_at.desc().nulls_last(), Thread.created_at.desc()).limit(
            limit
        )
        rows = list(await s.scalars(stmt))
        return {"items": await threads.views(s, rows, actor=who)}


@router.get("/threads/{thread_id}")
async def get_thread(rt: RuntimeDep, thread_id: str, actor: str = "you") -> dict[str, Any]:
    async with rt.db.read() as s:
        thread = await threads.get_thread(s, thread_id)
        who = await s.scalar(select(Actor).where(Actor.handle == actor, Actor.deleted.is_(False)))
        return await threads.view(s, thread, actor=who)


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(rt: RuntimeDep, thread_id: str) -> Response:
    """Delete a thread with everything in it; its open runs are cancelled first."""
    async with rt.db.transaction() as s:
        open_runs = list(
            await s.scalars(
                select(Run.id).where(Run.thread_id == thread_id, Run.status.in_(ACTIVE_RUN_STATUSES))
            )
        )
        await threads.delete_thread(s, thread_id)
    for run_id in open_runs:
        await rt.system.cancel(run_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/messages")
async def list_messages(
    rt: RuntimeDep,
    thread_id: str,
    after: str | None = None,
    before: str | None = Query(None, description="the `limit` messages just before this id"),
    latest: bool = Query(False, description="the `limit` newest messages"),
    limit: int = Query(100, ge=1, le=5000),
) -> dict[str, Any]:
    async with rt.db.read() as s:
        items = await threads.list_messages(
            s, thread_id, after=after, before=before, latest=latest, limit=limit
        )
    backwards = bool(before or latest)
    more = len(items) == limit
    return {
        "items": items,
        "next": items[-1]["id"] if more and not backwards else None,
        "previous": items[0]["id"] if more and backwards else None,
    }


@router.post("/threads/{thread_id}/messages", status_code=201)
async def post_message(rt: RuntimeDep, thread_id: str, body: MessageCreate) -> dict[str, Any]:
    if not body.content.strip():
        raise InvalidArgument("content must not be empty", {"field": "content"})
    async with rt.db.transaction() as s:
        thread = await threads.get_thread(s, thread_id)
        try:
            sender = await get_actor(s, body.from_)
        except NotFound as exc:
            raise InvalidArgument(f"unknown sender @{body.from_}", {"field": "from"}) from exc
        result = await rt.delivery.post(s, thread, body.content, sender=sender, to=body.to)
    return {"message": result.view, "addressed": result.addressed, "held": result.held}


@router.get("/actors/{handle}/inbox")
async def inbox(
    rt: RuntimeDep,
    handle: str,
    status: str | None = None,
    kind: str | None = None,
    thread_id: str | None = None,
    limit: int = Query(500, ge=1, le=5000),
) -> dict[str, Any]:
    async with rt.db.read() as s:
        actor = await get_actor(s, handle)
        stmt = select(InboxItem).where(InboxItem.actor_id == actor.id)
        if status:
            stmt = stmt.where(InboxItem.status == status)
        if kind:
            stmt = stmt.where(InboxItem.kind == kind)
        if thread_id:
            stmt = stmt.where(InboxItem.thread_id == thread_id)
        rows = await s.scalars(stmt.order_by(InboxItem.id).limit(limit))
        return {"items": [item_view(i) for i in rows]}


@router.post("/inbox/{item_id}/ack")
async def ack_item(rt: RuntimeDep, item_id: str) -> dict[str, Any]:
    async with rt.db.transaction() as s:
        item = await s.get(InboxItem, item_id)
        if item is None:
            raise NotFound(f"inbox item {item_id} not found")
        actor = await s.get(Actor, item.actor_id)
        if item.status == "queued" and actor is not None and actor.kind != "bot":
            item.status = "done"
            item.updated_at = now()
            await append_event(
                s, "inbox.updated", {"actor": actor.handle, "item": item_view(item)}, item.thread_id
            )
        return item_view(item)


@router.post("/inbox/ack")
async def ack_thread(rt: RuntimeDep, body: InboxAck) -> dict[str, Any]:
    async with rt.db.transaction() as s:
        actor = await get_actor(s, body.actor)
        result = await s.execute(
            update(InboxItem)
            .where(
                InboxItem.actor_id == actor.id,
                InboxItem.thread_id == body.thread_id,
                InboxItem.status == "queued",
                InboxItem.kind == "message",
            )
            .values(status="done", updated_at=now())
        )
        count = int(getattr(result, "rowcount", 0) or 0)
        if count:
            await append_event(
                s,
                "inbox.updated",
                {"actor": actor.handle, "thread_id": body.thread_id, "acked": count},
                body.thread_id,
            )
    return {"acked": count}
