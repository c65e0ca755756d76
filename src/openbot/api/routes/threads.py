"""Threads, messages and inboxes."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Header, Query, Response

from openbot.api.deps import RuntimeDep
from openbot.api.principal import PrincipalDep
from openbot.api.schemas import Acked, ItemList, MessagePage, ThreadList, errors
from openbot.core.scheduling import ItemKind
from openbot.core.states import ItemStatus
from openbot.runtime.commands import InboxAck, MessageCreate, ThreadCreate, ThreadUpdate
from openbot.runtime.scope import Scope
from openbot.runtime.views import ItemView, PostView, ThreadView

router = APIRouter()
_POSTED = {
    200: {"model": PostView, "description": "a retry with the same Idempotency-Key"},
    **errors(403, 404, 409),
}


@router.post("/threads", status_code=201, response_model=ThreadView)
async def create_thread(
    rt: RuntimeDep, principal: PrincipalDep, body: ThreadCreate | None = None
) -> dict[str, Any]:
    body = body or ThreadCreate()  # every field is optional, the body too
    if principal.actor is not None and principal.actor not in body.participants:  # its thread, then
        body = body.model_copy(update={"participants": [*body.participants, principal.actor]})
    return dict(await rt.threads.create(body))


@router.get("/threads", response_model=ThreadList)
async def list_threads(
    rt: RuntimeDep,
    principal: PrincipalDep,
    q: str | None = None,
    actor: str = "you",
    limit: int = Query(200, ge=1, le=1000),
) -> dict[str, Any]:
    """Most recently active first; an actor token gets the threads it takes part in (its unread)."""
    if principal.actor is not None:
        return {"items": await Scope(rt.db).list_threads(principal.actor, q=q, limit=limit)}
    return {"items": await rt.threads.list_threads(q=q, actor=actor, limit=limit)}


@router.get("/threads/{thread_id}", response_model=ThreadView, responses=errors(404))
async def get_thread(rt: RuntimeDep, thread_id: str, actor: str = "you") -> dict[str, Any]:
    return dict(await rt.threads.get(thread_id, actor=actor))


@router.patch("/threads/{thread_id}", response_model=ThreadView, responses=errors(404))
async def update_thread(rt: RuntimeDep, thread_id: str, body: ThreadUpdate) -> dict[str, Any]:
    """Partial: ``title``, ``default_bot``, ``working_directory`` (inside the workspaces root, 422
    otherwise)."""
    return dict(await rt.threads.update(thread_id, body))


@router.delete("/threads/{thread_id}", status_code=204, responses=errors(404))
async def delete_thread(rt: RuntimeDep, thread_id: str) -> Response:
    """Delete a thread with everything in it; its open runs are cancelled first."""
    await rt.threads.delete(thread_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/messages", response_model=MessagePage, responses=errors(404))
async def list_messages(
    rt: RuntimeDep,
    thread_id: str,
    after: str | None = None,
    before: str | None = Query(None, description="the `limit` messages just before this id"),
    latest: bool = Query(False, description="the `limit` newest messages"),
    limit: int = Query(100, ge=1, le=5000),
) -> dict[str, Any]:
    items = await rt.threads.messages(thread_id, after=after, before=before, latest=latest, limit=limit)
    backwards = bool(before or latest)
    more = len(items) == limit
    return {
        "items": items,
        "next": items[-1]["id"] if more and not backwards else None,
        "previous": items[0]["id"] if more and backwards else None,
    }


@router.post("/threads/{thread_id}/messages", status_code=201, response_model=PostView, responses=_POSTED)
async def post_message(
    rt: RuntimeDep,
    principal: PrincipalDep,
    thread_id: str,
    body: MessageCreate,
    response: Response,
    idempotency_key: str | None = Header(
        None, alias="Idempotency-Key", description="a retry with the same key answers the first post (200)"
    ),
) -> dict[str, Any]:
    named = body.from_ if "from_" in body.model_fields_set else None
    body = body.model_copy(update={"from_": principal.speaker(named)})
    posted = await rt.threads.post(thread_id, body, idempotency_key=idempotency_key)
    if posted.replayed:
        response.status_code = 200
    return dict(posted.view)


@router.get("/actors/{handle}/inbox", response_model=ItemList, responses=errors(403, 404))
async def inbox(
    rt: RuntimeDep,
    principal: PrincipalDep,
    handle: str,
    status: ItemStatus | None = None,
    kind: ItemKind | None = None,
    thread_id: str | None = None,
    limit: int = Query(500, ge=1, le=5000),
) -> dict[str, Any]:
    principal.speaker(handle)  # an actor token reads its own mailbox only
    items = await rt.threads.inbox(handle, status=status, kind=kind, thread_id=thread_id, limit=limit)
    return {"items": items}


@router.post("/inbox/{item_id}/ack", response_model=ItemView, responses=errors(403, 404))
async def ack_item(rt: RuntimeDep, principal: PrincipalDep, item_id: str) -> dict[str, Any]:
    return dict(await rt.threads.ack_item(item_id, owner=principal.actor))


@router.post("/inbox/ack", response_model=Acked, responses=errors(403, 404))
async def ack_thread(rt: RuntimeDep, principal: PrincipalDep, body: InboxAck) -> dict[str, Any]:
    named = body.actor if "actor" in body.model_fields_set else None
    body = body.model_copy(update={"actor": principal.speaker(named)})
    return {"acked": await rt.threads.ack_thread(body)}
