"""Runs: list, read, resume, cancel."""

from __future__ import annotations

from fastapi import APIRouter, Query

from openbot.api.deps import RuntimeDep
from openbot.api.principal import PrincipalDep
from openbot.api.schemas import RunList, errors
from openbot.core.states import RunStatus
from openbot.runtime.commands import ResumeBody
from openbot.runtime.views import RunDetail, RunView

router = APIRouter()


@router.get("/runs", responses=errors(404))
async def list_runs(
    rt: RuntimeDep,
    principal: PrincipalDep,
    thread_id: str | None = None,
    bot: str | None = None,
    status: RunStatus | None = None,
    limit: int = Query(200, ge=1, le=2000),
) -> RunList:
    runs = await rt.runs.list_runs(
        thread_id=thread_id, bot=bot, status=status, limit=limit, member=principal.actor
    )
    return {"items": runs}


@router.get("/runs/{run_id}", responses=errors(404))
async def get_run(rt: RuntimeDep, run_id: str) -> RunDetail:
    return await rt.runs.get(run_id)


@router.post("/runs/{run_id}/resume", status_code=202, responses=errors(403, 404, 409))
async def resume(rt: RuntimeDep, principal: PrincipalDep, run_id: str, body: ResumeBody) -> RunView:
    """Answer as the caller: an actor token answers only a question that reached it (403)."""
    return await rt.runs.resume(run_id, body, principal)


@router.post("/runs/{run_id}/cancel", status_code=202, responses=errors(404, 409))
async def cancel(rt: RuntimeDep, run_id: str) -> RunView:
    return await rt.runs.cancel(run_id)
