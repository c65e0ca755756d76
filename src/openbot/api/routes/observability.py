"""Server info, status, the activity timeline and the SSE event stream."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse

from openbot import PROTOCOL_VERSION, __version__
from openbot.api.deps import RuntimeDep
from openbot.api.schemas import ActivityList, Health, Info, Status
from openbot.core.errors import InvalidArgument
from openbot.core.json_limits import INT64_MAX
from openbot.runtime.access import ADMIN, Principal
from openbot.runtime.fanout import journal_item, revoked_item
from openbot.runtime.scope import Scope
from openbot.runtime.service.observe import ActivityFilter

router = APIRouter()

_JOURNAL_ID = re.compile(r"\s*[0-9]{1,19}\s*")  # ASCII digits only: str.isdigit() accepts "²"
_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-Sent Events: `id:` (journal id), `event:` (type) and `data:` (JSON) per event;"
        " `text.delta` has no id (live only); `reset` and `overflow` are described in docs/api.md",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


def _actor(request: Request) -> str | None:
    """The actor token's handle (None: the admin). Read from the request, not ``api.principal``:
    ``api.exposure`` imports this module, and ``api.principal`` imports ``api.exposure``."""
    principal: Principal = getattr(request.state, "principal", ADMIN)
    return principal.actor


@router.get("")
@router.get("/", include_in_schema=False)
async def info() -> Info:
    return {"name": "openbot", "version": __version__, "protocol_version": PROTOCOL_VERSION}


@router.get("/health")
async def health() -> Health:
    return {"ok": True}


@router.get("/status")
async def status(rt: RuntimeDep) -> Status:
    return await rt.observer.status()  # type: ignore[return-value]  # the same keys, closed


@router.get("/activity")
async def activity(
    rt: RuntimeDep,
    request: Request,
    thread_id: str | None = None,
    actor: str | None = None,
    run_id: str | None = None,
    event: str | None = None,
    level: Literal["info", "warning", "error"] | None = None,
    after_id: int | None = None,
    limit: int = Query(200, ge=1, le=2000),
) -> ActivityList:
    where = ActivityFilter(thread_id, actor, run_id, event, level, after_id, limit, _actor(request))
    return {"items": await rt.observer.activity(where)}


@router.get("/events", response_class=EventSourceResponse, responses=_STREAM)
async def events(
    rt: RuntimeDep,
    request: Request,
    thread_id: str | None = None,
    since: str | None = None,
    last_event_id: str | None = Header(None),
) -> EventSourceResponse:
    start_text = last_event_id or since
    if start_text is not None and (not _JOURNAL_ID.fullmatch(start_text) or int(start_text) > INT64_MAX):
        raise InvalidArgument(
            f"since / Last-Event-ID must be a journal id (an integer from 0 to {INT64_MAX})",
            {"since": start_text},
        )
    head, floor = await rt.observer.journal_bounds()
    start = int(start_text) if start_text is not None else head
    # A resume id the journal cannot continue from gets a ``reset``: its rows were pruned, or no id
    # that high was ever written (the database was replaced or restored), where waiting for ids to
    # pass it would silently skip every event until then.
    ahead = start > max(head, floor)
    reset_reason = "journal pruned" if start < floor else "ahead of the journal" if ahead else None
    reset = start_text is not None and reset_reason is not None
    # An actor token's stream carries its threads' rows only (one given by ?thread_id= was checked).
    actor = _actor(request)
    scope = await Scope(rt.db).stream(actor) if actor and not thread_id else None

    async def stream() -> AsyncIterator[dict[str, Any] | bytes]:
        # One shared reader fans the journal out to every stream; this one replays what was committed
        # before that reader's position, then takes rows and live events from a bounded buffer.
        # (Subscribed here, not in the handler: a response that never streams leaves nothing behind.)
        sub = rt.observer.fanout.attach(thread_id, head if reset else start, head, scope, actor)
        try:
            # Revocations from here on end the stream live (the fan-out); one committed between the
            # request's check and now is caught by checking the token again, once.
            from openbot.api.principal import still_valid  # principal imports this module's routes

            if actor and not await still_valid(request):
                yield revoked_item(actor)
                return
            yield {"comment": "connected"}
            if reset:
                yield {
                    "event": "reset",
                    "id": str(head),
                    "data": json.dumps({"reason": reset_reason, "head": head}),
                }
            if sub.replay is not None:
                async for row in rt.observer.replay(thread_id, *sub.replay):
                    if scope is None or scope.allows(row.type, row.thread_id, row.data):
                        yield journal_item(row)
            while (chunk := await sub.next()) is not None:  # ends after an ``overflow`` event
                yield chunk
        finally:
            sub.close()

    return EventSourceResponse(
        stream(), ping=int(rt.settings.heartbeat_seconds), headers={"Cache-Control": "no-store"}
    )
