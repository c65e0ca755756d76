"""Bots' memories (list, search, add, edit, delete) and what a run's first model call saw."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Response
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from openbot.api.deps import RuntimeDep
from openbot.api.principal import admin_only
from openbot.api.schemas import errors
from openbot.runtime.memory.context import ContextView
from openbot.runtime.memory.service import MemoryCreate, MemoryQuery, MemoryService, MemoryUpdate, MemoryView

router = APIRouter()
_ADMIN = admin_only("a bot's memory")


@with_config(ConfigDict(extra="forbid"))
class MemoryList(TypedDict):
    items: list[MemoryView]


@router.get("/bots/{handle}/memories", responses=errors(403, 404), dependencies=[_ADMIN])
async def list_memories(
    rt: RuntimeDep,
    handle: str,
    q: str | None = None,
    segment: str | None = None,
    tier: str | None = None,
    lifecycle: Literal["active", "archived", "all"] = "active",
    limit: int = Query(100, ge=1, le=1000),
) -> MemoryList:
    """With ``q``: ranked by relevance, best first (each with its ``score``); else newest first."""
    query = MemoryQuery(q=q, segment=segment, tier=tier, lifecycle=lifecycle, limit=limit)
    return {"items": await MemoryService(rt.db).list_memories(handle, query)}


@router.post("/bots/{handle}/memories", status_code=201, responses=errors(403, 404), dependencies=[_ADMIN])
async def create_memory(rt: RuntimeDep, handle: str, body: MemoryCreate) -> MemoryView:
    return await MemoryService(rt.db).create(handle, body)


@router.patch("/bots/{handle}/memories/{memory_id}", responses=errors(403, 404), dependencies=[_ADMIN])
async def update_memory(rt: RuntimeDep, handle: str, memory_id: str, body: MemoryUpdate) -> MemoryView:
    return await MemoryService(rt.db).update(handle, memory_id, body)


@router.delete(
    "/bots/{handle}/memories/{memory_id}", status_code=204, responses=errors(403, 404), dependencies=[_ADMIN]
)
async def delete_memory(rt: RuntimeDep, handle: str, memory_id: str) -> Response:
    await MemoryService(rt.db).delete(handle, memory_id)
    return Response(status_code=204)


@router.get("/runs/{run_id}/context", responses=errors(404))
async def run_context(rt: RuntimeDep, run_id: str) -> ContextView:
    """What the run's first model call saw, recorded when the run was prepared."""
    return await MemoryService(rt.db).run_context(run_id, in_flight=rt.runner.contexts)
