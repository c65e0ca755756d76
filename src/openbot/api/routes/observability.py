"""Server info, status, the activity timeline and the SSE event stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Header, Query, Request
from sqlalchemy import func, select
from sse_starlette import EventSourceResponse

from openbot import PROTOCOL_VERSION, __version__
from openbot.api.deps import RuntimeDep
from openbot.core.errors import InvalidArgument
from openbot.runtime.bus import Signal
from openbot.store.journal import journal_floor
from openbot.store.models import ActivityLog, Actor, Event, InboxItem, Run
from openbot.store.views import activity_view

router = APIRouter()


@router.get("")
@router.get("/", include_in_schema=False)
async def info() -> dict[str, Any]:
    return {"name": "openbot", "version": __version__, "protocol_version": PROTOCOL_VERSION}


@router.get("/health")
async def health() -> dict[str, bool]:
    return {"ok": True}


@router.get("/status")
async def status(rt: RuntimeDep) -> dict[str, Any]:
    async with rt.db.read() as s:
        run_counts = dict((await s.execute(select(Run.status, func.count()).group_by(Run.status))).all())
        waiting = select(Run.bot_id, Run.thread_id).where(Run.status == "waiting_human").subquery()
        rows = (
            await s.execute(
                select(InboxItem.status, InboxItem.kind, waiting.c.bot_id.is_not(None), func.count())
                .join(Actor, Actor.id == InboxItem.actor_id)
                .outerjoin(
                    waiting,
                    (waiting.c.bot_id == InboxItem.actor_id) & (waiting.c.thread_id == InboxItem.thread_id),
                )
                .where(Actor.kind == "bot", InboxItem.status.in_(("queued", "processing")))
                .group_by(InboxItem.status, InboxItem.kind, waiting.c.bot_id.is_not(None))
            )
        ).all()
    mailboxes = {"queued": 0, "processing": 0, "parked": 0}
    for item_status, kind, parked, count in rows:
        if item_status == "queued" and parked and kind == "message":
            mailboxes["parked"] += int(count)
        else:
            mailboxes[item_status] += int(count)
    return {
        "runs": {k: int(run_counts.get(k, 0)) for k in ("queued", "running", "waiting_human")},
        "mailboxes": mailboxes,
        "workers": len(rt.system.workers),
        "backend": rt.db.backend,
    }


@router.get("/activity")
async def activity(
    rt: RuntimeDep,
    thread_id: str | None = None,
    actor: str | None = None,
    run_id: str | None = None,
    event: str | None = None,
    level: str | None = None,
    after_id: int | None = None,
    limit: int = Query(200, ge=1, le=2000),
) -> dict[str, Any]:
    stmt = select(ActivityLog)
    if thread_id:
        stmt = stmt.where(ActivityLog.thread_id == thread_id)
    if actor:
        stmt = stmt.where(ActivityLog.actor_handle == actor)
    if run_id:
        stmt = stmt.where(ActivityLog.run_id == run_id)
    if event:
        stmt = stmt.where(
            ActivityLog.event.startswith(event) if event.endswith(".") else ActivityLog.event == event
        )
    if level:
        stmt = stmt.where(ActivityLog.level == level)
    if after_id is not None:
        stmt = stmt.where(ActivityLog.id > after_id).order_by(ActivityLog.id).limit(limit)
        async with rt.db.read() as s:
            rows = list(await s.scalars(stmt))
    else:
        async with rt.db.read() as s:
            rows = list(reversed(list(await s.scalars(stmt.order_by(ActivityLog.id.desc()).limit(limit)))))
    return {"items": [activity_view(r) for r in rows]}


@router.get("/events")
async def events(
    request: Request,
    rt: RuntimeDep,
    thread_id: str | None = None,
    since: str | None = None,
    last_event_id: str | None = Header(None),
) -> EventSourceResponse:
    start_text = last_event_id or since
    if start_text is not None and not start_text.strip().isdigit():
        raise InvalidArgument(
            "since / Last-Event-ID must be a journal id (an integer)", {"since": start_text}
        )
    async with rt.db.read() as s:
        head = int(await s.scalar(select(func.coalesce(func.max(Event.id), 0))) or 0)
        floor = await journal_floor(s)
    start = int(start_text) if start_text is not None else head
    reset = start_text is not None and start < floor
    sub = rt.bus.subscribe(thread_id)

    async def stream() -> AsyncIterator[dict[str, Any]]:
        last = head if reset else start
        try:
            yield {"comment": "connected"}
            if reset:
                yield {
                    "event": "reset",
                    "id": str(head),
                    "data": json.dumps({"reason": "journal pruned", "head": head}),
                }
            signal: Signal | None = None
            while True:
                if signal is None or signal.type == "journal":
                    # Read only up to what this signal announced, so live events queued after it
                    # (token deltas) are not overtaken by journal rows committed later.
                    upto = (signal.data or {}).get("upto") if signal is not None else None
                    async for item in _replay(rt, thread_id, last, upto):
                        last = int(item["id"])
                        yield item
                else:  # live-only events keep their order relative to the journal signals
                    yield {"event": signal.type, "data": json.dumps(signal.data)}
                if await request.is_disconnected():
                    return
                signal = await sub.next(timeout=rt.settings.poll_seconds)
        finally:
            sub.close()

    return EventSourceResponse(
        stream(), ping=int(rt.settings.heartbeat_seconds), headers={"Cache-Control": "no-store"}
    )


async def _replay(
    rt: RuntimeDep, thread_id: str | None, after: int, upto: int | None = None
) -> AsyncIterator[dict[str, Any]]:
    while True:
        async with rt.db.read() as s:
            stmt = select(Event).where(Event.id > after)
            if upto is not None:
                stmt = stmt.where(Event.id <= upto)
            if thread_id:
                stmt = stmt.where(Event.thread_id == thread_id)
            rows = list(await s.scalars(stmt.order_by(Event.id).limit(500)))
        for row in rows:
            yield {"event": row.type, "id": str(row.id), "data": json.dumps(row.data)}
        if len(rows) < 500:
            return
        after = rows[-1].id
